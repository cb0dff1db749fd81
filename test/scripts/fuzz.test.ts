import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { symlink } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { request } from 'undici';
import { callStream, dataLines, startHarness } from './helpers.ts';

const h = await startHarness({ after });
const marker = join(h.dataDir, 'ran');
// Every script here leaves a mark when it runs, so "nothing ran" can be checked.
const MARKING = `#!/bin/sh\ntouch "${marker}"\necho ran\n`;
await h.script('ok.sh', '#!/bin/sh\necho ok\n');
await h.script('reports/daily.sh', MARKING);
await h.script('../outside.sh', MARKING);
await symlink(join(h.folder, '../outside.sh'), join(h.folder, 'link.sh'));
const port = Number(new URL(h.base).port);

/** Sends bytes exactly as written (no URL normalisation) and returns the status and body. */
async function raw(requestText: string): Promise<{ status: number; body: string }> {
  const socket = connect(port, '127.0.0.1');
  // Not end(): a half-closed socket may be dropped before an async answer; `Connection: close` ends it.
  socket.write(requestText);
  let text = '';
  for await (const chunk of socket) text += (chunk as Buffer).toString('latin1');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
  return { status, body: text.slice(text.indexOf('\r\n\r\n') + 4) };
}

const get = (path: string) => raw(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);

async function stillServing() {
  assert.deepEqual(dataLines(await callStream(`${h.base}/ok`)), ['ok']);
  assert.equal(existsSync(marker), false, 'a script ran that should not have');
}

test('R-SCRIPT-1 `..`, encoded traversal, encoded slashes and odd bytes in paths → 404, nothing run', async () => {
  for (const path of [
    '/../outside',
    '/reports/../../outside',
    '/%2e%2e/outside',
    '/reports/%2E%2E/%2e%2e/outside',
    '/reports%2fdaily',
    '/reports%2Fdaily',
    '/reports/daily%00',
    '/reports/.daily',
    '/reports//daily',
    '/reports/daily.sh',
    `/${'a/'.repeat(20)}b`,
    `/${'x'.repeat(5000)}`,
  ]) {
    const answer = await get(path);
    assert.equal(answer.status, 404, path);
    assert.equal((JSON.parse(answer.body) as { error: { code: string } }).error.code, 'ScriptNotFound', path);
  }
  for (const path of ['/%ff%fe', '/%E0%A4%A', '/reports/%']) {
    const answer = await get(path);
    assert.equal(answer.status, 400, path);
    assert.equal((JSON.parse(answer.body) as { error: { code: string } }).error.code, 'InvalidPath', path);
  }
  await stillServing();
});

test('R-SCRIPT-1 a script path that is a symlink out of the folder → 404, nothing run', async () => {
  const answer = await request(`${h.base}/link`);
  assert.equal(answer.statusCode, 404);
  await answer.body.dump();
  await stillServing();
});

test('R-SCRIPT-4 parameter names with =, ;, newlines, spaces or a leading digit → 400, nothing run', async () => {
  for (const query of ['a%3Db=1', 'a;b=1', 'a%0Ab=1', 'a%0D%0Ab=1', 'a%20b=1', '1a=1', '=1', `${'n'.repeat(65)}=1`, 'a%00=1']) {
    const answer = await request(`${h.base}/reports/daily?${query}`);
    assert.equal(answer.statusCode, 400, query);
    assert.equal(((await answer.body.json()) as { error: { code: string } }).error.code, 'InvalidParameter', query);
  }
  await stillServing();
});

test('R-SCRIPT-4 repeated names, NUL in a value, too many parameters → 400, nothing run', async () => {
  const many = Array.from({ length: 101 }, (_, i) => `p${i}=1`).join('&');
  for (const query of ['a=1&a=2', 'a=1&A=2', 'a=%00', many]) {
    const answer = await request(`${h.base}/reports/daily?${query}`);
    assert.equal(answer.statusCode, 400, query.slice(0, 40));
    await answer.body.dump();
  }
  const form = await request(`${h.base}/reports/daily`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: `big=${'v'.repeat(70 * 1024)}`,
  });
  assert.equal(form.statusCode, 400);
  assert.match(((await form.body.json()) as { error: { message: string } }).error.message, /larger than 65536 bytes/);
  await stillServing();
});

test('R-SCRIPT-4 a huge query string is refused, and the server keeps serving', async () => {
  const answer = await get(`/reports/daily?q=${'x'.repeat(70 * 1024)}`);
  assert.ok(answer.status === 431 || answer.status === 400, String(answer.status));
  await stillServing();
});

test('R-SCRIPT-3 a body over the limit → 413 in the JSON error shape, nothing run', async () => {
  const answer = await request(`${h.base}/reports/daily`, { method: 'POST', body: Buffer.alloc(1024 * 1024 + 1, 'x') });
  assert.equal(answer.statusCode, 413);
  assert.equal(((await answer.body.json()) as { error: { code: string } }).error.code, 'BodyTooLarge');
  await stillServing();
});

test('R-SCRIPT-3 broken percent-encoding and invalid UTF-8 in values reach the script as text, never as code', async () => {
  await h.script('echo-param.sh', '#!/bin/sh\nprintf "%s\\n" "$PARAM_V"\n');
  for (const [query, expected] of [
    ['v=%zz', '%zz'],
    ['v=%ff', '\ufffd'],
    ['v=$(touch%20' + encodeURIComponent(marker) + ')', `$(touch ${marker})`],
    ['v=`id`;id', '`id`;id'],
  ] as const) {
    assert.deepEqual(dataLines(await callStream(`${h.base}/echo-param?${query}`)), [expected]);
  }
  await stillServing();
});

test('R-SCRIPT-3 methods no script allows (HEAD, OPTIONS, PUT) → 405 with Allow', async () => {
  for (const method of ['HEAD', 'OPTIONS', 'PUT', 'DELETE'] as const) {
    const answer = await request(`${h.base}/ok`, { method });
    assert.equal(answer.statusCode, 405, method);
    assert.equal(answer.headers.allow, 'GET, POST');
    await answer.body.dump();
  }
  await stillServing();
});
