/** The spec's deployment (§4.7, §5, §7, §8, §9) on the gateway's default configuration. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { Agent, request } from 'undici';
import { startCalculator } from '../../src/calculator/server.ts';
import { gateway } from '../../src/gateway/index.ts';
import { startGateway } from '../../src/gateway/server.ts';
import { startUsers } from '../../src/users/server.ts';
import { debianProgram, quiet, tempDataDir } from '../helpers/index.ts';
import { awayFromWindowEdge, echoBackend, specStack } from './helpers.ts';
import { mergeFacts } from '../../src/common/facts.ts';

const run = promisify(execFile);
const KEY = 'spec-test-key';

test('R-GW-1 GET /users reaches the backend at /api/getusers and returns its user list', async (t) => {
  const stack = await specStack(t, { apiKey: KEY });
  const direct = await request(stack.usersUrl);
  const expected = await direct.body.json();
  assert.ok(Array.isArray(expected) && expected.length >= 3, 'the backend is seeded with users');
  const res = await request(`${stack.proxy}/users?apikey=${KEY}`);
  assert.equal(res.statusCode, 200);
  assert.deepEqual(await res.body.json(), expected);
});

test('R-GW-1 the original path is stripped: the backend sees /api/getusers with the query passed through', async (t) => {
  const backend = await echoBackend(t);
  const stack = await specStack(t, { apiKey: KEY, usersUrl: `${backend.url}/api/getusers` });
  const res = await request(`${stack.proxy}/users?apikey=${KEY}&page=2`);
  assert.equal(res.statusCode, 200);
  await res.body.dump();
  assert.equal(backend.seen.length, 1);
  assert.equal(backend.seen[0]!.url, `/api/getusers?apikey=${KEY}&page=2`);
  assert.equal(backend.seen[0]!.headers['x-forwarded-prefix'], '/users');
});

test('R-GW-2 only GET is allowed: POST, PUT and DELETE /users match no route (404)', async (t) => {
  const backend = await echoBackend(t);
  const stack = await specStack(t, { apiKey: KEY, usersUrl: `${backend.url}/api/getusers` });
  for (const method of ['POST', 'PUT', 'DELETE'] as const) {
    const res = await request(`${stack.proxy}/users?apikey=${KEY}`, { method, body: '{}' });
    assert.equal(res.statusCode, 404, method);
    assert.equal(((await res.body.json()) as { message: string }).message, 'no Route matched with those values');
  }
  assert.equal(backend.seen.length, 0);
});

test('R-GW-3 the users service has 10000 ms connect/read/write timeouts and 10 retries', async (t) => {
  const stack = await specStack(t, { apiKey: KEY });
  const res = await request(`${stack.admin}/services/users`);
  const service = (await res.body.json()) as Record<string, unknown>;
  assert.equal(service.connect_timeout, 10000);
  assert.equal(service.read_timeout, 10000);
  assert.equal(service.write_timeout, 10000);
  assert.equal(service.retries, 10);
  assert.equal(service.path, '/api/getusers');
});

/** An upstream that resets its first `failures` connections, then serves. */
async function flakyBackend(t: { after(fn: () => unknown): void }, failures: number) {
  const http = createServer((req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ url: req.url })));
  let connections = 0;
  const net = createNetServer((socket) => {
    connections++;
    if (connections <= failures) socket.resetAndDestroy();
    else http.emit('connection', socket);
  });
  await new Promise<void>((resolve) => net.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    http.closeAllConnections();
    return new Promise((resolve) => net.close(resolve));
  });
  return { url: `http://127.0.0.1:${(net.address() as AddressInfo).port}`, connections: () => connections };
}

test('R-GW-3 retries: an upstream that fails its first 4 connections is reached on try 5', async (t) => {
  const flaky = await flakyBackend(t, 4);
  const stack = await specStack(t, { apiKey: KEY, usersUrl: `${flaky.url}/api/getusers` });
  const res = await request(`${stack.proxy}/users?apikey=${KEY}`);
  assert.equal(res.statusCode, 200);
  assert.deepEqual(await res.body.json(), { url: `/api/getusers?apikey=${KEY}` });
  assert.equal(flaky.connections(), 5);
});

test('R-GW-3 retries: 10 retries mean 11 tries, then 502', async (t) => {
  const flaky = await flakyBackend(t, 1000);
  const stack = await specStack(t, { apiKey: KEY, usersUrl: `${flaky.url}/api/getusers` });
  const res = await request(`${stack.proxy}/users?apikey=${KEY}`);
  assert.equal(res.statusCode, 502);
  assert.equal(((await res.body.json()) as { message: string }).message, 'An invalid response was received from the upstream server');
  assert.equal(flaky.connections(), 11);
});

test('R-GW-4 the key is accepted as query parameter apikey and as header apikey; it belongs to a named consumer', async (t) => {
  const backend = await echoBackend(t);
  const stack = await specStack(t, { apiKey: KEY, consumer: 'alice', usersUrl: `${backend.url}/api/getusers` });
  assert.deepEqual(stack.facts.demoConsumer, { username: 'alice', apiKey: KEY });
  await awayFromWindowEdge(1000, 400);
  const byQuery = await request(`${stack.proxy}/users?apikey=${KEY}`);
  assert.equal(byQuery.statusCode, 200);
  await byQuery.body.dump();
  await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 5));
  const byHeader = await request(`${stack.proxy}/users`, { headers: { apikey: KEY } });
  assert.equal(byHeader.statusCode, 200);
  await byHeader.body.dump();
  assert.equal(backend.seen.length, 2);
  for (const seen of backend.seen) {
    assert.equal(seen.headers['x-consumer-username'], 'alice');
    assert.match(String(seen.headers['x-consumer-id']), /^[0-9a-f-]{36}$/);
  }
});

test('R-GW-4 the demo key is generated once and kept in the data dir', async (t) => {
  const stack = await specStack(t);
  const key = stack.facts.demoConsumer!.apiKey;
  assert.ok(key.length >= 20);
  const res = await request(`${stack.proxy}/users?apikey=${encodeURIComponent(key)}`);
  assert.equal(res.statusCode, 200);
  await res.body.dump();
  const admin = await request(`${stack.admin}/consumers/demo/key-auth`);
  const { data } = (await admin.body.json()) as { data: { key: string }[] };
  assert.equal(data[0]!.key, key);
});

test('R-GW-5 without a key or with a wrong key the request is rejected (401) and never reaches the backend', async (t) => {
  const backend = await echoBackend(t);
  const stack = await specStack(t, { apiKey: KEY, usersUrl: `${backend.url}/api/getusers` });
  const none = await request(`${stack.proxy}/users`);
  assert.equal(none.statusCode, 401);
  assert.equal(none.headers['www-authenticate'], 'Key realm="kong"');
  assert.equal(((await none.body.json()) as { message: string }).message, 'No API key found in request');
  for (const attempt of [{ query: '?apikey=wrong' }, { headers: { apikey: `${KEY}x` } }, { query: `?apikey=${KEY.slice(0, -1)}` }]) {
    const res = await request(`${stack.proxy}/users${attempt.query ?? ''}`, { headers: attempt.headers });
    assert.equal(res.statusCode, 401);
    assert.equal(((await res.body.json()) as { message: string }).message, 'Unauthorized');
  }
  assert.equal(backend.seen.length, 0);
});

test('R-GW-6 two requests in one second: 200 then 429 with Retry-After and the rate-limit headers', async (t) => {
  const stack = await specStack(t, { apiKey: KEY });
  const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 5));
  // On a loaded machine a pair can straddle a second; such a pair proves nothing and is tried again in a fresh second.
  let first: Awaited<ReturnType<typeof request>>;
  let second: Awaited<ReturnType<typeof request>>;
  for (let attempt = 0; ; attempt++) {
    await nextSecond();
    const started = Date.now();
    first = await request(`${stack.proxy}/users?apikey=${KEY}`);
    second = await request(`${stack.proxy}/users`, { headers: { apikey: KEY } });
    if (Math.floor(started / 1000) === Math.floor(Date.now() / 1000) || attempt === 4) break;
    await Promise.all([first.body.dump(), second.body.dump()]);
  }
  assert.equal(first.statusCode, 200);
  await first.body.dump();
  assert.equal(first.headers['x-ratelimit-limit-second'], '1');
  assert.equal(first.headers['x-ratelimit-remaining-second'], '0');
  assert.equal(first.headers['ratelimit-limit'], '1');
  assert.equal(first.headers['ratelimit-remaining'], '0');
  assert.equal(first.headers['ratelimit-reset'], '1');
  assert.equal(second.statusCode, 429);
  assert.equal(second.headers['retry-after'], '1');
  assert.equal(second.headers['x-ratelimit-remaining-second'], '0');
  assert.equal(((await second.body.json()) as { message: string }).message, 'API rate limit exceeded');
  // The next window lets the consumer in again.
  await nextSecond();
  const third = await request(`${stack.proxy}/users?apikey=${KEY}`);
  assert.equal(third.statusCode, 200);
  await third.body.dump();
});

test('R-GW-7 an unmatched route answers 404 stating that no route matched', async (t) => {
  const stack = await specStack(t, { apiKey: KEY });
  for (const path of ['/', '/nothing', '/calc/v2/add/1/2', '/api/getusers']) {
    const res = await request(`${stack.proxy}${path}`);
    assert.equal(res.statusCode, 404, path);
    const body = (await res.body.json()) as { message: string; request_id: string };
    assert.equal(body.message, 'no Route matched with those values');
    assert.match(body.request_id, /^[0-9a-f]{32}$/);
    assert.equal(res.headers['x-kong-request-id'], body.request_id);
  }
});

test('R-GW-8 plain HTTP to the HTTPS-only route returns 426 with Upgrade headers; HTTPS succeeds', async (t) => {
  const stack = await specStack(t, { apiKey: KEY });
  const plain = await request(`${stack.proxy}/secure/users?apikey=${KEY}`);
  assert.equal(plain.statusCode, 426);
  assert.equal(plain.headers.upgrade, 'TLS/1.2, HTTP/1.1');
  assert.equal(plain.headers.connection, 'Upgrade');
  assert.equal(((await plain.body.json()) as { message: string }).message, 'Please use HTTPS protocol');
  const dispatcher = new Agent({ connect: { ca: await readFile(stack.caCertPath, 'utf8') } });
  t.after(() => dispatcher.close());
  const secure = await request(`${stack.https.replace('127.0.0.1', 'localhost')}/secure/users?apikey=${KEY}`, { dispatcher });
  assert.equal(secure.statusCode, 200);
  assert.ok(Array.isArray(await secure.body.json()));
});

test('R-CALC-2 through the gateway: curl GET /calc/v1/add/<a>/<b> answers the sum', async (t) => {
  const curl = debianProgram('curl', '/usr/bin/curl');
  const stack = await specStack(t, { apiKey: KEY });
  const { stdout } = await run(curl, ['-sS', '-w', '\n%{http_code}', `${stack.proxy}/calc/v1/add/40/2`]);
  assert.equal(stdout, '42\n200');
  const negative = await run(curl, ['-sS', `${stack.proxy}/calc/v1/add/-7/3`]);
  assert.equal(negative.stdout, '-4');
  const bad = await request(`${stack.proxy}/calc/v1/add/x/3`);
  assert.equal(bad.statusCode, 400, "the calculator's own error passes through");
  await bad.body.dump();
});

test('R-CALC-2 under offcloud up the gateway takes the calculator and user API URLs from the components started before it', async (t) => {
  const dataDir = await tempDataDir(t);
  const calculator = await startCalculator(quiet);
  t.after(() => calculator.close());
  const users = await startUsers({ ...quiet, dataDir });
  t.after(() => users.close());
  const wired = gateway.wireUp!(mergeFacts([calculator, users]), new Map());
  assert.equal(wired.usersUrl, users.facts!.users!.usersUrl);
  assert.equal(wired.calculatorUrl, calculator.facts!.calculator!.url);
  const running = await startGateway({ ...quiet, httpsPort: 0, adminPort: 0, dataDir, apiKey: KEY, ...wired });
  t.after(() => running.close());
  const res = await request(`${running.urls[0]!.url}/calc/v1/add/1/1`);
  assert.equal(await res.body.text(), '2');
});
