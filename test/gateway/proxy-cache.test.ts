/**
 * proxy-cache (memory strategy) as Kong 3.x documents and runs it: what is
 * cacheable, the cache key, X-Cache-Status Miss/Hit/Refresh/Bypass, Age,
 * TTLs on an injected clock, Cache-Control with `cache_control`.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { test } from 'node:test';
import { request } from 'undici';
import { echoBackend, errorsOf, gatewayWith } from './helpers.ts';

const ROUTE = '7b6c5f0e-1d1a-4f5e-9c59-2f4b4b0a9a01';
const CONSUMER = { alice: '0a3f5a7e-6c7d-4a54-8b2f-8f61b0d1c001', bob: '0a3f5a7e-6c7d-4a54-8b2f-8f61b0d1c002' };

async function call(url: string, init: Parameters<typeof request>[1] = {}) {
  const res = await request(url, init);
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
}

/** Kong's key, from the formula its docs and source give: sha256 of `prefix|method|uri|params|headers`. */
function kongKey(prefix: string, method: string, uri: string, params = '', headers = ''): string {
  return createHash('sha256').update(`${prefix}|${method}|${uri}|${params}|${headers}`).digest('hex');
}

/** A service whose answers a test shapes by query (`ct`, `cc`, `expires` in ms, `status`); each answer numbered in X-Served. */
async function shapedBackend(t: Parameters<typeof echoBackend>[0]) {
  let served = 0;
  return echoBackend(t, (req: IncomingMessage, res: ServerResponse) => {
    served++;
    const asked = new URL(req.url!, 'http://x').searchParams;
    const headers: Record<string, string | string[]> = {
      'content-type': asked.get('ct') ?? 'application/json',
      'x-served': String(served),
      'set-cookie': ['a=1', 'b=2'],
    };
    if (asked.has('cc')) headers['cache-control'] = asked.get('cc')!;
    if (asked.has('expires')) headers.expires = new Date(Number(asked.get('expires'))).toUTCString();
    res.writeHead(Number(asked.get('status') ?? 200), headers).end(JSON.stringify({ served, url: req.url }));
  });
}

async function cachedGateway(t: Parameters<typeof echoBackend>[0], config: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const backend = await shapedBackend(t);
  const clock = { now: Date.UTC(2026, 0, 1) };
  const gw = await gatewayWith(
    t,
    {
      _format_version: '3.0',
      services: [
        { name: 's', url: backend.url, routes: [{ id: ROUTE, paths: ['/'], plugins: [{ name: 'proxy-cache', config: { strategy: 'memory', ...config } }] }] },
      ],
      ...extra,
    },
    { clock: () => clock.now },
  );
  return { backend, gw, clock };
}

test('proxy-cache: Miss then Hit with Kong cache key, Age from the injected clock, Refresh after cache_ttl, gone after storage_ttl', async (t) => {
  const { backend, gw, clock } = await cachedGateway(t, { cache_ttl: 30, storage_ttl: 60 });
  const first = await call(`${gw.proxy}/items?b=2&a=1`);
  assert.equal(first.status, 200);
  assert.equal(first.headers['x-cache-status'], 'Miss');
  assert.equal(first.headers['x-cache-key'], kongKey(ROUTE, 'GET', 'GET /items', 'a=1:b=2'));
  assert.equal(first.headers.age, undefined);

  clock.now += 10_000;
  // The same arguments in another order are the same request.
  const hit = await call(`${gw.proxy}/items?a=1&b=2`);
  assert.deepEqual([hit.status, hit.body, hit.headers['x-cache-status'], hit.headers.age], [200, first.body, 'Hit', '10']);
  assert.equal(hit.headers['x-cache-key'], first.headers['x-cache-key']);
  assert.equal(hit.headers['x-served'], '1');
  assert.deepEqual(hit.headers['set-cookie'], ['a=1', 'b=2']);
  assert.equal(hit.headers['content-length'], String(Buffer.byteLength(first.body)));
  assert.match(String(hit.headers['x-kong-request-id']), /^[0-9a-f]{32}$/);
  assert.notEqual(hit.headers['x-kong-request-id'], first.headers['x-kong-request-id']);
  assert.equal(backend.seen.length, 1);

  // Without a query the request line keeps its version in the key (nginx's $request up to a `?`).
  const plain = await call(`${gw.proxy}/items`);
  assert.equal(plain.headers['x-cache-key'], kongKey(ROUTE, 'GET', 'GET /items HTTP/1.1'));

  clock.now += 21_000; // 31 s old: past cache_ttl, still stored
  const refresh = await call(`${gw.proxy}/items?a=1&b=2`);
  assert.deepEqual([refresh.headers['x-cache-status'], refresh.headers['x-served']], ['Refresh', '3']);
  clock.now += 30_000;
  assert.deepEqual([(await call(`${gw.proxy}/items?a=1&b=2`)).headers.age, backend.seen.length], ['30', 3]);
  clock.now += 30_001; // the refreshed copy's storage_ttl (60 s) is over
  const gone = await call(`${gw.proxy}/items?a=1&b=2`);
  assert.deepEqual([gone.headers['x-cache-status'], gone.headers['x-served']], ['Miss', '4']);
});

test('proxy-cache: Bypass for methods, statuses and content types not listed (exact media types, as Kong matches them)', async (t) => {
  const { backend, gw } = await cachedGateway(t, { content_type: ['application/json', 'text/html; charset=utf-8', 'image/*'] });
  const post = await call(`${gw.proxy}/p`, { method: 'POST', body: '{}' });
  assert.deepEqual([post.headers['x-cache-status'], post.headers['x-cache-key']], ['Bypass', undefined]);
  for (const [path, status] of [
    ['/?ct=application%2Fjson%3B%20charset%3Dutf-8', 'Bypass'],
    ['/?ct=text%2Fplain', 'Bypass'],
    ['/?status=500', 'Bypass'],
    ['/?status=404', 'Miss'],
    ['/?ct=text%2Fhtml%3B%20charset%3D%22utf-8%22', 'Miss'],
    ['/?ct=image%2Fpng', 'Miss'],
  ] as const) {
    assert.equal((await call(`${gw.proxy}${path}`)).headers['x-cache-status'], status, path);
    assert.equal((await call(`${gw.proxy}${path}`)).headers['x-cache-status'], status === 'Miss' ? 'Hit' : 'Bypass', path);
  }
  assert.equal(backend.seen.length, 1 + 3 * 2 + 3);
  // HEAD is cached apart from GET: the method is part of the key.
  const head = await call(`${gw.proxy}/h`, { method: 'HEAD' });
  assert.equal(head.headers['x-cache-status'], 'Miss');
  assert.equal((await call(`${gw.proxy}/h`, { method: 'HEAD' })).headers['x-cache-status'], 'Hit');
  assert.equal((await call(`${gw.proxy}/h`)).headers['x-cache-status'], 'Miss');
});

test('proxy-cache: vary_query_params, vary_headers and ignore_uri_case shape the key as Kong documents', async (t) => {
  const { backend, gw } = await cachedGateway(t, { vary_query_params: ['page'], vary_headers: ['X-Tenant'], ignore_uri_case: true });
  const first = await call(`${gw.proxy}/List?page=2&utm=a`, { headers: { 'x-tenant': 'acme' } });
  assert.equal(first.headers['x-cache-key'], kongKey(ROUTE, 'GET', 'get /list', 'page=2', 'X-Tenant=acme'));
  assert.equal((await call(`${gw.proxy}/list?utm=b&page=2`, { headers: { 'X-TENANT': 'acme' } })).headers['x-cache-status'], 'Hit');
  assert.equal((await call(`${gw.proxy}/list?page=2`, { headers: { 'x-tenant': 'globex' } })).headers['x-cache-status'], 'Miss');
  assert.equal((await call(`${gw.proxy}/list?page=3`, { headers: { 'x-tenant': 'acme' } })).headers['x-cache-status'], 'Miss');
  const repeated = await call(`${gw.proxy}/list?page=3&page=1`);
  assert.equal(repeated.headers['x-cache-key'], kongKey(ROUTE, 'GET', 'get /list', 'page=1,3'));
  assert.equal(backend.seen.length, 4);
});

test('proxy-cache: cache_control honours the answer’s max-age/private/Expires and the client’s no-cache, max-age, max-stale, min-fresh, only-if-cached', async (t) => {
  const { backend, gw, clock } = await cachedGateway(t, { cache_control: true, storage_ttl: 100 });
  const fiveSeconds = `${gw.proxy}/five?cc=public%2C%20max-age%3D5`;
  assert.equal((await call(fiveSeconds)).headers['x-cache-status'], 'Miss');
  assert.equal((await call(fiveSeconds)).headers['x-cache-status'], 'Hit');
  assert.equal((await call(fiveSeconds, { headers: { 'cache-control': 'no-cache' } })).headers['x-cache-status'], 'Bypass');
  clock.now += 3000;
  assert.equal((await call(fiveSeconds, { headers: { 'cache-control': 'max-age=2' } })).headers['x-cache-status'], 'Refresh');
  clock.now += 10_000; // 10 s old, 5 s past its max-age: Kong serves it unless the client limits staleness
  assert.deepEqual([(await call(fiveSeconds)).headers['x-cache-status'], backend.seen.length], ['Hit', 3]);
  assert.equal((await call(fiveSeconds, { headers: { 'cache-control': 'max-stale=2' } })).headers['x-cache-status'], 'Refresh');
  assert.equal((await call(fiveSeconds, { headers: { 'cache-control': 'min-fresh=6' } })).headers['x-cache-status'], 'Refresh');

  for (const directive of ['private%2C%20max-age%3D60', 'no-store', 'max-age%3D0', 'no-cache']) {
    assert.equal((await call(`${gw.proxy}/d?cc=${directive}`)).headers['x-cache-status'], 'Bypass', directive);
  }
  // No Cache-Control: Expires gives the lifetime; none at all is not cacheable.
  const expires = `${gw.proxy}/e?expires=${clock.now + 20_000}`;
  assert.equal((await call(expires)).headers['x-cache-status'], 'Miss');
  assert.equal((await call(expires)).headers['x-cache-status'], 'Hit');
  assert.equal((await call(`${gw.proxy}/plain`)).headers['x-cache-status'], 'Bypass');

  const onlyCached = await call(`${gw.proxy}/never-seen`, { headers: { 'cache-control': 'only-if-cached' } });
  assert.deepEqual([onlyCached.status, onlyCached.body], [504, '']);
  assert.equal((await call(fiveSeconds, { headers: { 'cache-control': 'only-if-cached' } })).status, 200);
});

test('proxy-cache: response_headers switches hide the diagnostic headers unless the request carries Kong-Debug', async (t) => {
  const { gw, clock } = await cachedGateway(t, { response_headers: { age: false, 'X-Cache-Status': false, 'X-Cache-Key': false } });
  await call(`${gw.proxy}/quiet`);
  clock.now += 4000;
  const hit = await call(`${gw.proxy}/quiet`);
  assert.deepEqual(
    [hit.headers['x-cache-status'], hit.headers['x-cache-key'], hit.headers.age, hit.headers['x-served']],
    [undefined, undefined, undefined, '1'],
  );
  const debug = await call(`${gw.proxy}/quiet`, { headers: { 'kong-debug': '1' } });
  assert.deepEqual([debug.headers['x-cache-status'], debug.headers.age], ['Hit', '4']);
});

test('proxy-cache: each consumer has its own entries (consumer id in the key), and a hit still needs the key', async (t) => {
  const { backend, gw } = await cachedGateway(
    t,
    {},
    {
      plugins: [{ name: 'key-auth' }],
      consumers: [
        { id: CONSUMER.alice, username: 'alice', keyauth_credentials: [{ key: 'alice-key' }] },
        { id: CONSUMER.bob, username: 'bob', keyauth_credentials: [{ key: 'bob-key' }] },
      ],
    },
  );
  const alice = await call(`${gw.proxy}/me`, { headers: { apikey: 'alice-key' } });
  assert.equal(alice.headers['x-cache-key'], kongKey(`${CONSUMER.alice}:${ROUTE}`, 'GET', 'GET /me HTTP/1.1'));
  assert.equal((await call(`${gw.proxy}/me`, { headers: { apikey: 'alice-key' } })).headers['x-cache-status'], 'Hit');
  assert.equal((await call(`${gw.proxy}/me`, { headers: { apikey: 'bob-key' } })).headers['x-cache-status'], 'Miss');
  assert.equal((await call(`${gw.proxy}/me`)).status, 401);
  assert.equal(backend.seen.length, 2);
});

test('proxy-cache: Kong’s schema and messages; odd requests are answered and nothing cached is lost', async (t) => {
  const plugin = (config: unknown) => ({ _format_version: '3.0', plugins: [{ name: 'proxy-cache', config }] });
  assert.deepEqual(errorsOf(plugin({})), ['plugins[0].config.strategy: required field missing']);
  assert.deepEqual(errorsOf(plugin({ strategy: 'redis' })), ['plugins[0].config.strategy: expected one of: memory']);
  assert.deepEqual(errorsOf(plugin({ strategy: 'memory', cache_ttl: 0, response_code: [], request_method: ['DELETE'], ttl: 5 })), [
    'plugins[0].config.ttl: unknown field',
    'plugins[0].config.response_code: length must be at least 1',
    'plugins[0].config.request_method[0]: expected one of: HEAD, GET, POST, PATCH, PUT',
    'plugins[0].config.cache_ttl: value must be greater than 0',
  ]);
  assert.deepEqual(errorsOf(plugin({ strategy: 'memory', response_code: [99], vary_headers: 'x' })), [
    'plugins[0].config.response_code[0]: value should be between 100 and 900',
    'plugins[0].config.vary_headers: expected an array',
  ]);

  const { backend, gw } = await cachedGateway(t, { cache_control: true });
  const kept = `${gw.proxy}/kept?cc=max-age%3D60`;
  await call(kept);
  for (const headers of [{ 'cache-control': 'max-age=abc, =, ,,,max-stale' }, { 'cache-control': 'x'.repeat(4000) }, { 'x-odd': '\u00ff' }]) {
    assert.equal((await call(kept, { headers })).status, 200);
  }
  for (const target of ['/q?%zz=%zz&&=x&a', `/q?${'a=1&'.repeat(500)}`, '/q/%2e%2e/%2e%2e/etc']) {
    assert.equal((await call(`${gw.proxy}${target}`)).status, 200, target);
  }
  const again = await call(kept);
  assert.deepEqual([again.headers['x-cache-status'], again.headers['x-served']], ['Hit', '1']);
  assert.ok(backend.seen.length >= 4);
});
