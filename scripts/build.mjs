#!/usr/bin/env node
// `npm run build` (npm runs it as `prepare`: on a clone's `npm install` and before
// `npm pack`): src/ compiled by tsc into dist/, with the files that are not TypeScript
// (devices.proto, the console's page) copied beside the code that reads them by
// import.meta.url. dist/.built, written last, tells bin/offcloud.js that the build is
// newer than every source. The build goes to a folder beside dist/ and replaces it in
// one rename, so that a running `offcloud` (a test beside `npm pack`) never sees half of it.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';

process.chdir(new URL('..', import.meta.url).pathname);
if (!existsSync('node_modules/typescript/bin/tsc')) {
  // `npm ci --omit=dev` (the container image) has no compiler: bin/offcloud.js runs src/ through tsx.
  console.log('build: typescript is not installed (a production install); src/ runs through tsx');
  process.exit(0);
}
const next = `dist.${process.pid}`;
rmSync(next, { recursive: true, force: true });
const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json', '--outDir', next], { stdio: 'inherit' });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
cpSync('src', next, { recursive: true, filter: (path) => !path.endsWith('.ts') });
writeFileSync(`${next}/.built`, `${new Date().toISOString()}\n`);
const old = `dist.${process.pid}.old`;
if (existsSync('dist')) renameSync('dist', old);
renameSync(next, 'dist');
rmSync(old, { recursive: true, force: true });
