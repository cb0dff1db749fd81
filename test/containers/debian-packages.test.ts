/**
 * scripts/debian-packages.txt is complete and right. The set-up (podman.ts,
 * ensureSetupImage) has run `npm run setup`'s script as root on a minimal Debian
 * bookworm with Node and nothing else: it installed every listed package,
 * without their Recommends as on a clean machine. Here setup runs again in the
 * result and must find every listed file, the check that decides what it installs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BUILD_TIMEOUT, ensureSetupImage, podman, REPO_MOUNT, SETUP_IMAGE, setupImageHash } from './podman.ts';

test('npm run setup on a minimal Debian installs every listed package: run again there, it finds every listed file', BUILD_TIMEOUT, async () => {
  await ensureSetupImage();
  // The image was made from this checkout's setup script and list.
  const { current, wanted } = await setupImageHash();
  assert.equal(current, wanted);
  const { stdout } = await podman(['run', '--rm', ...REPO_MOUNT, SETUP_IMAGE, 'node', '/repo/scripts/setup.mjs']);
  assert.equal(stdout, 'setup: every npm and Debian package the tests need is installed\n');
});
