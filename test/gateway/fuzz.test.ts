/** Bad input at every endpoint (proxy, admin API, user API): clean 4xx in the interface's shape, and everything keeps serving. */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import { request } from 'undici';
import { quiet, tempDataDir } from '../helpers/index.ts';
import { startUsers } from '../../src/users/server.ts';
import { echoBackend, errorsOf, gatewayWith, loadDoc } from './helpers.ts';

/** Sends raw bytes and returns everything the server wrote before closing (or until `until` shows up). */
function raw(url: string, bytes: string, until?: RegExp): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(bytes));
    let got = '';
    socket.on('data', (chunk: Buffer) => {
      got += chunk.toString('latin1');
      if (until?.test(got)) socket.destroy();
    });
    socket.on('close', () => resolve(got));
    socket.on('error', reject);
  });
}

const statusOf = (response: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1]);

async function gateway(t: Parameters<typeof gatewayWith>[0], options: Parameters<typeof gatewayWith>[2] = {}) {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, { _format_version: '3.0', services: [{ name: 's', url: `${backend.url}/up`, routes: [{ paths: ['/api'] }] }] }, options);
  const alive = async () => {
    const res = await request(`${gw.proxy}/api/ok`);
    assert.equal(res.statusCode, 200);
    await res.body.dump();
  };
  return { gw, backend, alive };
}

test('huge headers, a huge URL and broken request framing get 431/400 in the error shape; the proxy keeps serving', async (t) => {
  const { gw, alive } = await gateway(t);
  const big = await raw(gw.proxy, `GET /api HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
  assert.equal(statusOf(big), 431);
  assert.match(big, /"message":"Request header or cookie too large"/);
  const longUrl = await raw(gw.proxy, `GET /api/${'b'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
  assert.equal(statusOf(longUrl), 431);
  for (const broken of [
    'GARBAGE\r\n\r\n',
    'GET /api HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n',
    'GET /api HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n',
    'GET /api HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n',
  ]) {
    const answer = await raw(gw.proxy, broken);
    assert.equal(statusOf(answer), 400, JSON.stringify(broken));
    assert.match(answer, /"message":"Bad request"/);
  }
  await alive();
});

test('path tricks: dot segments are resolved within the route, escaping the root or encoded slashes are refused', async (t) => {
  const { gw, backend, alive } = await gateway(t);
  const inside = await request(`${gw.proxy}/api/a/../b/./c`);
  assert.equal(inside.statusCode, 200);
  await inside.body.dump();
  assert.equal(backend.seen.at(-1)!.url, '/up/b/c');
  const out = await raw(gw.proxy, 'GET /api/../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n', /\r\n\r\n[\s\S]*\}/);
  assert.equal(statusOf(out), 400);
  // Raw bytes: a WHATWG URL client would resolve %2e%2e itself before sending.
  for (const path of ['/api/..%2F..%2Fsecret', '/api/%2e%2e/%2e%2e/x', '/api%5c..%5cx', '/api/%zz', '/api/a%00b']) {
    const answer = await raw(gw.proxy, `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`, /\r\n\r\n[\s\S]*\}/);
    assert.equal(statusOf(answer), 400, path);
    assert.match(answer, /"message":"Bad request"/);
  }
  const climbing = await raw(gw.proxy, 'GET /api/%2e%2e HTTP/1.1\r\nHost: x\r\n\r\n', /\r\n\r\n[\s\S]*\}/);
  assert.equal(statusOf(climbing), 404, '/api/.. is /, which no route matches');
  assert.ok(
    backend.seen.every((s) => s.url.startsWith('/up/')),
    'nothing outside the service path reached the upstream',
  );
  await alive();
});

test('an absurd Content-Length is refused at once with 413 and the connection closed', async (t) => {
  const { gw, backend, alive } = await gateway(t, { maxBodySize: 1024 * 1024 });
  const answer = await raw(gw.proxy, 'POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000\r\n\r\nabc');
  assert.equal(statusOf(answer), 413);
  assert.match(answer, /Connection: close/i);
  assert.match(answer, /"message":"Payload too large"/);
  assert.equal(backend.seen.length, 0);
  await alive();
});

test('slowloris: a client that never finishes its headers gets 408 after the header timeout; others are served meanwhile', async (t) => {
  const { gw, alive } = await gateway(t, { clientHeaderTimeout: 400 });
  const slow = raw(gw.proxy, 'GET /api HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n');
  await alive();
  const answer = await slow;
  assert.equal(statusOf(answer), 408);
  assert.match(answer, /"message":"Request timeout"/);
  await alive();
});

test(
  'a regex route with nested quantifiers cannot be made to stall the gateway: the hostile path gets its 404, others are served',
  { timeout: 60_000 },
  async (t) => {
    // On a backtracking engine this one request took minutes and every other request waited.
    const backend = await echoBackend(t);
    const gw = await gatewayWith(t, { _format_version: '3.0', services: [{ name: 's', url: backend.url, routes: [{ paths: ['~/files/(a+)+$', '/ok'] }] }] });
    const hostile = raw(gw.proxy, `GET /files/${'a'.repeat(5000)}! HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    const meanwhile = await request(`${gw.proxy}/ok`);
    assert.equal(meanwhile.statusCode, 200);
    await meanwhile.body.dump();
    assert.equal(statusOf(await hostile), 404);
    const matching = await request(`${gw.proxy}/files/aaa`);
    assert.equal(matching.statusCode, 200, 'the route itself still matches');
    await matching.body.dump();
  },
);

test('regex paths RE2 cannot run in linear time (lookaround, backreferences) are refused when the file loads', () => {
  const base = (path: string) => ({ _format_version: '3.0', services: [{ name: 's', url: 'http://h', routes: [{ paths: [path] }] }] });
  for (const path of ['~/a(?=b)', '~/(a)\\1', '~/a(?<!b)']) {
    const errors = errorsOf(base(path));
    assert.equal(errors.length, 1, path);
    assert.match(errors[0]!, /^services\[0\]\.routes\[0\]\.paths\[0\]: invalid regex: /, path);
  }
  assert.equal(loadDoc(base('~/ok/(?<id>\\d+)$')).candidates.length, 1, 'named groups are RE2 syntax too');
});

test('admin API: broken JSON, wrong shapes, oversized and odd paths get Kong-style errors; the configuration stays', async (t) => {
  const { gw, alive } = await gateway(t);
  const post = (body: string | Buffer, type = 'application/json') => request(`${gw.admin}/config`, { method: 'POST', body, headers: { 'content-type': type } });
  for (const body of ['{"_format_version": ', '[1,2,3]', '"just a string"', '{"_format_version":"3.0","services":"nope"}', '{"config": "services: ["}']) {
    const res = await post(body);
    assert.equal(res.statusCode, 400, body);
    assert.equal(typeof ((await res.body.json()) as { message: unknown }).message, 'string');
  }
  const huge = await post(Buffer.alloc(17 * 1024 * 1024, 0x20));
  assert.equal(huge.statusCode, 413);
  await huge.body.dump();
  const unknownType = await post('x', 'application/octet-stream');
  assert.equal(unknownType.statusCode, 415);
  await unknownType.body.dump();
  const bomb = `_format_version: "3.0"\na: &a ["x","x","x","x","x","x","x","x","x"]\n${Array.from({ length: 150 }, (_, i) => `k${i}: [*a,*a,*a,*a,*a,*a,*a,*a,*a]`).join('\n')}\n`;
  const aliases = await post(bomb, 'text/yaml');
  assert.equal(aliases.statusCode, 400, 'YAML alias bombs are refused');
  await aliases.body.dump();
  for (const path of ['/services/..%2F..%2Fetc', '/routes/%00', '/nope', '/consumers?size=-1', '/consumers?offset=%%%']) {
    const res = await request(`${gw.admin}${path}`);
    assert.ok([400, 404].includes(res.statusCode), `${path}: ${res.statusCode}`);
    assert.equal(typeof ((await res.body.json()) as { message: unknown }).message, 'string');
  }
  await alive();
});

test('user API: wrong methods, bad ids, broken escapes and huge headers get JSON errors; the list is intact', async (t) => {
  const dataDir = await tempDataDir(t);
  const users = await startUsers({ ...quiet, dataDir });
  t.after(() => users.close());
  const url = users.facts!.users!.usersUrl;
  const list = await (await request(url)).body.json();
  assert.equal((list as unknown[]).length, 3);
  const cases: [string, Parameters<typeof request>[1], number][] = [
    [url, { method: 'POST', body: '{"name":"x"}', headers: { 'content-type': 'application/json' } }, 405],
    [url, { method: 'DELETE' }, 405],
    [`${url}/abc`, {}, 404],
    [`${url}/99999999999999999999`, {}, 404],
    [`${url}/%zz`, {}, 400],
    [`${url.replace('/api/getusers', '')}/api/../etc/passwd`, {}, 404],
  ];
  for (const [target, init, expected] of cases) {
    const res = await request(target, init);
    assert.equal(res.statusCode, expected, `${init?.method ?? 'GET'} ${target}`);
    assert.equal(typeof ((await res.body.json()) as { message: unknown }).message, 'string');
  }
  const one = await request(`${url}/2`);
  assert.deepEqual(((await one.body.json()) as { username: string }).username, 'grace');
  const big = await raw(url, `GET /api/getusers HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
  assert.equal(statusOf(big), 431);
  assert.deepEqual(await (await request(url)).body.json(), list);
});
