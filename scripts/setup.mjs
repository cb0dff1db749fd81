#!/usr/bin/env node
// `npm run setup`: installs what the test suites need and a clean clone lacks:
// the npm packages (npm ci) and, as root, the Debian packages the suites start
// on loopback (scripts/debian-packages.txt). The README's test command runs it
// before `npm test`; CI runs it once after `npm ci`.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

process.chdir(new URL('..', import.meta.url).pathname);

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options });
  return result.status ?? 1;
}

// npm packages: a clean clone has none yet.
if (!existsSync('node_modules/.package-lock.json')) {
  console.log('setup: installing npm packages (npm ci)');
  if (run('npm', ['ci']) !== 0) process.exit(1);
}

// Debian packages the suites start on loopback (redis-server, etcd, …).
const wanted = readFileSync('scripts/debian-packages.txt', 'utf8')
  .split('\n')
  .map((line) => line.replace(/#.*/, '').trim())
  .filter(Boolean)
  .map((line) => line.split(/\s+/));
const missing = [...new Set(wanted.filter(([, file]) => !existsSync(file)).map(([pkg]) => pkg))];
if (!missing.length) {
  console.log('setup: every npm and Debian package the tests need is installed');
  process.exit(0);
}
if (process.getuid?.() !== 0) {
  console.error(`setup: missing Debian packages (run npm run setup as root, or apt-get install them): ${missing.join(' ')}`);
  process.exit(1);
}
console.log(`setup: installing Debian packages: ${missing.join(' ')}`);
const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
const install = () => run('apt-get', ['install', '-y', '--no-install-recommends', ...missing], { env });
if (install() !== 0 && (run('apt-get', ['update'], { env }) !== 0 || install() !== 0)) {
  console.error(`setup: could not install ${missing.join(' ')}`);
  process.exit(1);
}
