/** key-auth and rate-limiting (local policy) as Kong 3.x runs them. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { awayFromWindowEdge, echoBackend, gatewayWith } from './helpers.ts';

const HOUR = 3_600_000;

function doc(url: string, routePlugins: Record<string, unknown>[], extra: Record<string, unknown> = {}) {
  return {
    _format_version: '3.0',
    services: [{ name: 'svc', url, routes: [{ name: 'r', paths: ['/'], plugins: routePlugins }] }],
    consumers: [
      { username: 'alice', custom_id: 'A-1', keyauth_credentials: [{ key: 'alice-key' }] },
      { username: 'bob', keyauth_credentials: [{ key: 'bob-key' }] },
      { username: 'guest' },
    ],
    ...extra,
  };
}

async function statuses(urls: string[], init: Parameters<typeof request>[1] = {}): Promise<number[]> {
  return Promise.all(
    urls.map(async (url) => {
      const res = await request(url, init);
      await res.body.dump();
      return res.statusCode;
    }),
  );
}

const count = (list: number[], status: number) => list.filter((s) => s === status).length;

test('key-auth: custom key names, hide_credentials, consumer headers; forged consumer headers are replaced', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url, [{ name: 'key-auth', config: { key_names: ['x-api-key', 'token'], hide_credentials: true } }]));
  const byHeader = await request(`${gw.proxy}/a`, { headers: { 'x-api-key': 'alice-key', 'x-consumer-username': 'root', 'x-anonymous-consumer': 'true' } });
  assert.equal(byHeader.statusCode, 200);
  await byHeader.body.dump();
  const byQuery = await request(`${gw.proxy}/b?token=bob-key&keep=1`);
  assert.equal(byQuery.statusCode, 200);
  await byQuery.body.dump();
  const [alice, bob] = backend.seen;
  assert.equal(alice!.headers['x-api-key'], undefined, 'the key header is hidden from the upstream');
  assert.equal(alice!.headers['x-consumer-username'], 'alice');
  assert.equal(alice!.headers['x-consumer-custom-id'], 'A-1');
  assert.equal(alice!.headers['x-anonymous-consumer'], undefined);
  assert.match(String(alice!.headers['x-credential-identifier']), /^[0-9a-f-]{36}$/);
  assert.equal(bob!.url, '/b?keep=1', 'the key query argument is hidden from the upstream');
  assert.equal(bob!.headers['x-consumer-username'], 'bob');
  assert.equal(bob!.headers['x-consumer-custom-id'], undefined);
});

test('key-auth: a consumer name holding a line break cannot smuggle a header to the upstream: 500, nothing sent, the gateway keeps serving', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, {
    _format_version: '3.0',
    services: [{ name: 'svc', url: backend.url, routes: [{ name: 'r', paths: ['/'], plugins: [{ name: 'key-auth' }] }] }],
    consumers: [
      { username: 'evil\r\nX-Injected: yes', keyauth_credentials: [{ key: 'evil-key' }] },
      { username: 'fine', custom_id: 'line\nbreak', keyauth_credentials: [{ key: 'fine-key' }] },
      { username: 'alice', keyauth_credentials: [{ key: 'alice-key' }] },
    ],
  });
  for (const key of ['evil-key', 'fine-key']) {
    const res = await request(`${gw.proxy}/x`, { headers: { apikey: key } });
    assert.equal(res.statusCode, 500, key);
    assert.equal(((await res.body.json()) as { message: string }).message, 'An unexpected error occurred');
  }
  assert.equal(backend.seen.length, 0);
  const ok = await request(`${gw.proxy}/y`, { headers: { apikey: 'alice-key' } });
  assert.equal(ok.statusCode, 200);
  await ok.body.dump();
  assert.equal(backend.seen.length, 1);
  assert.equal(backend.seen[0]!.headers['x-injected'], undefined);
  assert.equal(backend.seen[0]!.headers['x-consumer-username'], 'alice');
});

test('key-auth: a repeated key is refused; keys in the body when key_in_body is on', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url, [{ name: 'key-auth', config: { key_in_body: true, hide_credentials: true } }]));
  const twice = await request(`${gw.proxy}/?apikey=alice-key&apikey=bob-key`);
  assert.equal(twice.statusCode, 401);
  assert.equal(((await twice.body.json()) as { message: string }).message, 'Duplicate API key found');
  const form = await request(`${gw.proxy}/form`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'apikey=alice-key&a=1',
  });
  assert.equal(form.statusCode, 200);
  await form.body.dump();
  const json = await request(`${gw.proxy}/json`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ apikey: 'bob-key', b: 2 }),
  });
  assert.equal(json.statusCode, 200);
  await json.body.dump();
  assert.equal(backend.seen[0]!.body.toString(), 'a=1');
  assert.equal(backend.seen[0]!.headers['content-length'], '3');
  assert.deepEqual(JSON.parse(backend.seen[1]!.body.toString()), { b: 2 });
  assert.equal(backend.seen[1]!.headers['x-consumer-username'], 'bob');
  const broken = await request(`${gw.proxy}/json`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"apikey": ' });
  assert.equal(broken.statusCode, 401);
  await broken.body.dump();
});

test('key-auth: anonymous lets a failed request through as the anonymous consumer; run_on_preflight false skips OPTIONS', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url, [{ name: 'key-auth', config: { anonymous: 'guest', run_on_preflight: false } }]));
  const anonymous = await request(`${gw.proxy}/`, { headers: { apikey: 'wrong' } });
  assert.equal(anonymous.statusCode, 200);
  await anonymous.body.dump();
  assert.equal(backend.seen[0]!.headers['x-consumer-username'], 'guest');
  assert.equal(backend.seen[0]!.headers['x-anonymous-consumer'], 'true');
  const preflight = await request(`${gw.proxy}/`, { method: 'OPTIONS' });
  assert.equal(preflight.statusCode, 200);
  await preflight.body.dump();
  assert.equal(backend.seen[1]!.headers['x-consumer-username'], undefined);
});

test('rate-limiting (local): 50 concurrent requests in one window let exactly the limit through', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url, [{ name: 'key-auth' }, { name: 'rate-limiting', config: { hour: 10 } }]));
  await awayFromWindowEdge(HOUR, 10_000);
  const results = await statuses(Array.from({ length: 50 }, () => `${gw.proxy}/?apikey=alice-key`));
  assert.equal(count(results, 200), 10);
  assert.equal(count(results, 429), 40);
  assert.equal(backend.seen.length, 10);
  // Another consumer has its own counter.
  const bob = await statuses([`${gw.proxy}/?apikey=bob-key`]);
  assert.deepEqual(bob, [200]);
});

test('rate-limiting runs after key-auth: rejected requests are never counted', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url, [{ name: 'key-auth' }, { name: 'rate-limiting', config: { hour: 1 } }]));
  await awayFromWindowEdge(HOUR, 10_000);
  assert.deepEqual(await statuses([`${gw.proxy}/`, `${gw.proxy}/?apikey=nope`]), [401, 401]);
  assert.deepEqual(await statuses([`${gw.proxy}/?apikey=alice-key`]), [200]);
  assert.deepEqual(await statuses([`${gw.proxy}/?apikey=alice-key`]), [429]);
});

test('rate-limiting: every window gets headers; the most restrictive one drives RateLimit-*; custom error code and message', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(
    t,
    doc(backend.url, [{ name: 'rate-limiting', config: { minute: 2, hour: 100, limit_by: 'ip', error_code: 503, error_message: 'slow down' } }]),
  );
  await awayFromWindowEdge(60_000, 10_000);
  const first = await request(`${gw.proxy}/`);
  await first.body.dump();
  assert.equal(first.headers['x-ratelimit-limit-minute'], '2');
  assert.equal(first.headers['x-ratelimit-remaining-minute'], '1');
  assert.equal(first.headers['x-ratelimit-limit-hour'], '100');
  assert.equal(first.headers['x-ratelimit-remaining-hour'], '99');
  assert.equal(first.headers['ratelimit-limit'], '2');
  assert.equal(first.headers['ratelimit-remaining'], '1');
  const reset = Number(first.headers['ratelimit-reset']);
  assert.ok(reset >= 1 && reset <= 60, `reset ${reset}`);
  await (await request(`${gw.proxy}/`)).body.dump();
  const third = await request(`${gw.proxy}/`);
  assert.equal(third.statusCode, 503);
  assert.equal(((await third.body.json()) as { message: string }).message, 'slow down');
  assert.ok(Number(third.headers['retry-after']) >= 1);
  assert.equal(third.headers['x-ratelimit-remaining-hour'], '98', 'a refused request is not counted');
});

test('rate-limiting: hide_client_headers; limit_by header and path; a consumer-scoped plugin overrides the route one', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(
    t,
    doc(
      backend.url,
      [
        { name: 'key-auth', config: { anonymous: 'guest' } },
        { name: 'rate-limiting', config: { hour: 1, limit_by: 'header', header_name: 'x-tenant', hide_client_headers: true } },
      ],
      { plugins: [{ name: 'rate-limiting', consumer: 'alice', route: 'r', config: { hour: 3, limit_by: 'path', path: '/alice' } }] },
    ),
  );
  await awayFromWindowEdge(HOUR, 10_000);
  const tenantA = await request(`${gw.proxy}/`, { headers: { 'x-tenant': 'a' } });
  await tenantA.body.dump();
  assert.equal(tenantA.statusCode, 200);
  assert.equal(tenantA.headers['x-ratelimit-limit-hour'], undefined);
  assert.equal(tenantA.headers['ratelimit-limit'], undefined);
  assert.deepEqual(await statuses([`${gw.proxy}/`], { headers: { 'x-tenant': 'a' } }), [429]);
  assert.deepEqual(await statuses([`${gw.proxy}/`], { headers: { 'x-tenant': 'b' } }), [200]);
  // alice gets her own plugin instance: 3 per hour on /alice.
  const alice = await statuses(Array.from({ length: 4 }, () => `${gw.proxy}/alice?apikey=alice-key`));
  assert.deepEqual(alice.sort(), [200, 200, 200, 429]);
});

test('key-auth: a credential with a ttl stops working when it expires', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, {
    _format_version: '3.0',
    services: [{ name: 'svc', url: backend.url, routes: [{ paths: ['/'], plugins: [{ name: 'key-auth' }] }] }],
    consumers: [{ username: 'temp', keyauth_credentials: [{ key: 'short-lived', ttl: 3 }] }],
  });
  // The ttl counts from the load, which happened before this point.
  const loadedBefore = Date.now();
  assert.deepEqual(await statuses([`${gw.proxy}/?apikey=short-lived`]), [200]);
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, loadedBefore + 3100 - Date.now())));
  assert.deepEqual(await statuses([`${gw.proxy}/?apikey=short-lived`]), [401]);
});
