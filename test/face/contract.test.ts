/**
 * Start-up of the face container: without Eula/Billing/ApiKey it refuses to
 * start (before loading any model) and says which one is missing; the
 * resource note of §4.12 is in its README section.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { StartupError } from '../../src/common/errors.ts';
import { PACKAGE_ROOT } from '../../src/common/models.ts';
import { startFace } from '../../src/face/server.ts';
import { quiet, tempDataDir } from '../helpers/index.ts';

const run = promisify(execFile);
const full = { eula: 'accept', billing: 'http://127.0.0.1:9/', apiKey: 'k' };

test('R-FACE-6 start-up requires Eula=accept, Billing and ApiKey, and names the one missing', async (t) => {
  const dataDir = await tempDataDir(t);
  const env = {};
  for (const [missing, given] of [
    ['Eula', { ...full, eula: '' }],
    ['Eula', { ...full, eula: 'no' }],
    ['Billing', { ...full, billing: '' }],
    ['ApiKey', { ...full, apiKey: '' }],
  ] as const) {
    // The container's own variables (Eula, Billing, ApiKey) would fill the gap: start from none.
    const saved = { Eula: process.env.Eula, Billing: process.env.Billing, ApiKey: process.env.ApiKey };
    delete process.env.Eula;
    delete process.env.Billing;
    delete process.env.ApiKey;
    try {
      await assert.rejects(startFace({ ...quiet, ...env, dataDir, ...given }), (err: Error) => err instanceof StartupError && err.message.includes(missing));
    } finally {
      Object.assign(process.env, Object.fromEntries(Object.entries(saved).filter(([, v]) => v !== undefined)));
    }
  }
});

test('R-FACE-6 `offcloud face` without the parameters exits non-zero with one line naming Eula', async (t) => {
  const dataDir = await tempDataDir(t);
  const env = { ...process.env };
  delete env.Eula;
  delete env.EULA;
  delete env.OFFCLOUD_FACE_EULA;
  await assert.rejects(
    run(process.execPath, [`${PACKAGE_ROOT}/bin/offcloud.js`, 'face', '--port', '0', '--data-dir', dataDir], { env, timeout: 60_000 }),
    (err: { code?: number; stderr?: string }) => {
      assert.equal(err.code, 1);
      assert.match(err.stderr ?? '', /missing start-up parameter Eula/);
      return true;
    },
  );
});

test('R-FACE-7 the README section states the container needs 6 GB of memory and 2 CPU cores', async () => {
  const readme = await readFile(`${PACKAGE_ROOT}/docs/face.md`, 'utf8');
  assert.match(readme, /6 GB/);
  assert.match(readme, /2 CPU cores/);
});
