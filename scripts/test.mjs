#!/usr/bin/env node
// `npm test`: runs every test/**/*.test.ts with node:test through tsx;
// `npm test -- test/calculator` runs one folder (or file) instead.
// What the suites need installed comes first, from `npm run setup`.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { cpus } from 'node:os';

const root = new URL('..', import.meta.url).pathname;
process.chdir(root);

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options });
  return result.status ?? 1;
}

function findTests(path) {
  if (statSync(path).isFile()) return path.endsWith('.test.ts') ? [path] : [];
  return readdirSync(path)
    .sort()
    .flatMap((name) => findTests(join(path, name)));
}

const targets = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const files = (targets.length ? targets : ['test']).flatMap(findTests);
if (!files.length) {
  console.error('test: no test files found');
  process.exit(1);
}
// A folder's own set-up (test/<folder>/setup.ts, e.g. container images to build) runs once
// before its suites, outside the runner's per-file timeout.
for (const setup of new Set(files.map((file) => join(dirname(file), 'setup.ts')))) {
  if (existsSync(setup) && run(process.execPath, ['--import', 'tsx', setup]) !== 0) process.exit(1);
}
const concurrency = process.env.OFFCLOUD_TEST_CONCURRENCY ?? String(Math.max(2, cpus().length));
process.exit(
  // --test-force-exit: a file ends when its tests and hooks are done, even if a library
  // (a browser driver, a gRPC channel) keeps a handle open; seen with the console's
  // browser suite beside the container suites, where a file then sat until its 300 s limit.
  run(process.execPath, ['--import', 'tsx', '--test', '--test-force-exit', `--test-concurrency=${concurrency}`, '--test-timeout=300000', ...files], {
    env: { ...process.env, OFFCLOUD_TESTING: '1' },
  }),
);
