#!/usr/bin/env node
// `npm test`: installs what the suite needs (npm packages, Debian packages),
// then runs every test/**/*.test.ts with node:test through tsx.
// `npm test -- test/calculator` runs one folder (or file) instead.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { cpus } from 'node:os';

const root = new URL('..', import.meta.url).pathname;
process.chdir(root);

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options });
  return result.status ?? 1;
}

// npm packages: a clean clone has none yet.
if (!existsSync('node_modules/.package-lock.json')) {
  console.log('test: installing npm packages (npm ci)');
  if (run('npm', ['ci']) !== 0) process.exit(1);
}

// Debian packages the suites start on loopback (redis-server, etcd, …).
const wanted = readFileSync('scripts/debian-packages.txt', 'utf8')
  .split('\n')
  .map((line) => line.replace(/#.*/, '').trim())
  .filter(Boolean)
  .map((line) => line.split(/\s+/));
const missing = [...new Set(wanted.filter(([, file]) => !existsSync(file)).map(([pkg]) => pkg))];
if (missing.length) {
  if (process.getuid?.() === 0) {
    console.log(`test: installing Debian packages: ${missing.join(' ')}`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const install = () => run('apt-get', ['install', '-y', '--no-install-recommends', ...missing], { env });
    if (install() !== 0 && (run('apt-get', ['update'], { env }) !== 0 || install() !== 0)) {
      console.error(`test: could not install ${missing.join(' ')}; the suites that need them will fail`);
    }
  } else {
    console.error(`test: missing Debian packages (install them as root): ${missing.join(' ')}`);
  }
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
const concurrency = process.env.OFFCLOUD_TEST_CONCURRENCY ?? String(Math.max(2, cpus().length));
process.exit(
  run(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-timeout=300000', ...files], {
    env: { ...process.env, OFFCLOUD_TESTING: '1' },
  }),
);
