import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'undici';
import { LineWatcher } from '../helpers/index.ts';

test('shutdown: after SIGTERM the in-flight request completes, new connections are refused, exit code 0', async (t) => {
  const child = spawn(process.execPath, ['--import', 'tsx', new URL('./fixtures/slow-server.ts', import.meta.url).pathname], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => child.kill('SIGKILL'));
  const stdout = new LineWatcher(child.stdout);
  const stderr = new LineWatcher(child.stderr);
  const url = await stdout.waitFor(/^http:\/\//);
  const inFlight = request(`${url}/slow`).then(async (r) => ({ status: r.statusCode, body: await r.body.text() }));
  await stdout.waitFor(/^received$/);
  child.kill('SIGTERM');
  await stderr.waitFor(/draining/);
  await assert.rejects(request(`${url}/health`, { headersTimeout: 2000 }), /ECONNREFUSED|other side closed|ECONNRESET/);
  assert.deepEqual(await inFlight, { status: 200, body: 'finished' });
  const [code] = await once(child, 'exit');
  assert.equal(code, 0);
});
