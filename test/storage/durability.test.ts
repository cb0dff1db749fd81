import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { createHash } from 'node:crypto';
import { request } from 'undici';
import { startForTest } from '../identity/helpers.ts';
import { LineWatcher, eventWithin } from '../helpers/index.ts';

const BIN = new URL('../../bin/offcloud.js', import.meta.url).pathname;

async function startStorageProcess(dataDir: string): Promise<{ child: ChildProcess; endpoint: string }> {
  const child = spawn(process.execPath, [BIN, 'storage', '--data-dir', dataDir, '--port', '0', '--https-port', '0', '--log-level', 'warn'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout = new LineWatcher(child.stdout!);
  const line = await stdout.waitFor(/https:\/\/127\.0\.0\.1:\d+\/devstoreaccount1/, 60_000);
  return { child, endpoint: /https:\/\/127\.0\.0\.1:\d+\/devstoreaccount1/.exec(line)![0] };
}

function pattern(size: number, seed: number): Buffer {
  const out = Buffer.alloc(size);
  for (let i = 0; i < size; i++) out[i] = (i * 31 + seed) % 256;
  return out;
}

const md5 = (b: Buffer) => createHash('md5').update(b).digest('base64');

test('durability: kill -9 during large uploads leaves the old blob or nothing; acknowledged blobs survive a restart byte for byte', async (t) => {
  const identity = await startForTest(t);
  const tokenAnswer = await request(`${identity.imdsUrl}/metadata/identity/oauth2/token?api-version=2018-02-01&resource=https://storage.azure.com`, {
    headers: { Metadata: 'true' },
  });
  const token = ((await tokenAnswer.body.json()) as { access_token: string }).access_token;
  const headers = { authorization: `Bearer ${token}`, 'x-ms-version': '2026-04-06' };
  let server = await startStorageProcess(identity.dataDir);
  t.after(() => server.child.kill('SIGKILL'));
  const call = async (path: string, method: 'GET' | 'PUT', body?: Buffer | Readable, extra: Record<string, string> = {}) => {
    const answer = await request(`${server.endpoint}${path}`, { method, headers: { ...headers, ...extra }, body, dispatcher: identity.dispatcher });
    return { status: answer.statusCode, body: Buffer.from(await answer.body.arrayBuffer()) };
  };

  assert.equal((await call('/keep?restype=container', 'PUT')).status, 201);
  const old = pattern(1024 * 1024, 1);
  const small = pattern(3000, 2);
  assert.equal((await call('/keep/big.bin', 'PUT', old, { 'x-ms-blob-type': 'BlockBlob' })).status, 201);
  assert.equal((await call('/keep/small.bin', 'PUT', small, { 'x-ms-blob-type': 'BlockBlob' })).status, 201);

  // Start two large uploads (one replacing big.bin, one new), send part of them, then kill -9.
  const chunk = pattern(1024 * 1024, 3);
  let sent = 0;
  let halfway!: () => void;
  const reachedHalfway = new Promise<void>((resolve) => (halfway = resolve));
  const slowBody = () =>
    new Readable({
      read() {
        sent++;
        if (sent === 16) halfway();
        if (sent < 64) setTimeout(() => this.push(chunk), 5);
      },
    });
  const uploads = ['/keep/big.bin', '/keep/fresh.bin'].map((path) =>
    request(`${server.endpoint}${path}`, {
      method: 'PUT',
      headers: { ...headers, 'x-ms-blob-type': 'BlockBlob', 'content-length': String(64 * chunk.length) },
      body: slowBody(),
      dispatcher: identity.dispatcher,
    }).catch((err: Error) => err),
  );
  await reachedHalfway;
  server.child.kill('SIGKILL');
  await eventWithin(server.child, 'exit', 'the storage server to exit', 60_000);
  for (const outcome of await Promise.all(uploads)) assert.ok(outcome instanceof Error, 'the interrupted uploads were never acknowledged');

  server = await startStorageProcess(identity.dataDir);
  const big = await call('/keep/big.bin', 'GET');
  assert.equal(big.status, 200);
  assert.equal(md5(big.body), md5(old), 'the old big.bin, whole');
  assert.equal((await call('/keep/fresh.bin', 'GET')).status, 404, 'the new blob does not exist at all');
  assert.equal(md5((await call('/keep/small.bin', 'GET')).body), md5(small));
  const files = await readdir(join(identity.dataDir, 'storage', 'accounts', 'devstoreaccount1', 'keep', 'data'));
  assert.equal(files.length, 2, `only the two acknowledged blobs' files remain: ${files.join(', ')}`);
});
