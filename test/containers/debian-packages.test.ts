/**
 * scripts/debian-packages.txt is complete and right: `npm run setup` (its
 * script, as npm runs it) on a minimal Debian bookworm with Node and nothing
 * else (the base the container suites build on) installs every package listed,
 * without their Recommends as on a clean machine, and afterwards finds each
 * listed file, the check that decides what it installs. The Debian archives
 * are kept between runs, so only the first downloads them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BUILD_TIMEOUT, cacheDir, ensureBase, podman, ROOT } from './podman.ts';

test('npm run setup on a minimal Debian installs every listed package, and a second run finds every listed file', BUILD_TIMEOUT, async () => {
  const base = await ensureBase();
  const setup = 'node /repo/scripts/setup.mjs';
  const { stdout } = await podman(
    ['run', '--rm', '-v', `${ROOT}:/repo:ro`, '-v', `${cacheDir('apt-archives')}:/var/cache/apt/archives`, base, 'sh', '-c', `${setup} && ${setup}`],
    { timeoutMs: 1_500_000 },
  );
  assert.match(stdout, /^setup: installing Debian packages: /m, stdout.slice(-2000));
  // The second run's check, by file: every package's file is there.
  assert.match(stdout, /setup: every npm and Debian package the tests need is installed\n$/, stdout.slice(-2000));
});
