/**
 * Upstreams and targets (Kong's round-robin balancer) and grpc/grpcs routes:
 * the last two rows of Kong's status table (reference A.4) produced for real,
 * weighted distribution, retries moving to the next target, config errors
 * by path, the admin API's upstream paths.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { toDeclarativeYaml } from '../../src/gateway/config/declarative.ts';
import { echoBackend, errorsOf, freePort, gatewayWith, loadDoc as load } from './helpers.ts';

const hostPort = (url: string) => new URL(url).host;

/** A service on upstream `pool` with the given targets, one catch-all route. */
function balanced(targets: { target: string; weight?: number }[], service: Record<string, unknown> = {}) {
  return {
    _format_version: '3.0',
    upstreams: [{ name: 'pool', targets }],
    services: [{ name: 'svc', host: 'pool', ...service, routes: [{ name: 'all', paths: ['/'] }] }],
  };
}

async function sequential(url: string, count: number, init?: Parameters<typeof request>[1]) {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) {
    const res = await request(url, init);
    statuses.push(res.statusCode);
    await res.body.dump();
  }
  return statuses;
}

test("A.4 row 'no healthy target': 503 failure to get a peer from the ring-balancer when every target has weight 0, or there is none", async (t) => {
  const backend = await echoBackend(t);
  for (const targets of [[{ target: hostPort(backend.url), weight: 0 }], []]) {
    const gw = await gatewayWith(t, balanced(targets));
    const res = await request(`${gw.proxy}/x`);
    assert.equal(res.statusCode, 503);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    const body = (await res.body.json()) as { message: string; request_id: string };
    assert.equal(body.message, 'failure to get a peer from the ring-balancer');
    assert.match(body.request_id, /^[0-9a-f]{32}$/);
    assert.equal(body.request_id, res.headers['x-kong-request-id']);
  }
  assert.equal(backend.seen.length, 0);
});

test('round-robin follows the weights exactly (100/200/300 over 60 requests); a weight-0 target gets nothing; Host is the target', async (t) => {
  const backends = await Promise.all([echoBackend(t), echoBackend(t), echoBackend(t), echoBackend(t)]);
  const weights = [100, 200, 300, 0];
  const gw = await gatewayWith(t, balanced(backends.map((b, i) => ({ target: hostPort(b.url), weight: weights[i] }))));
  const statuses = await sequential(`${gw.proxy}/hello`, 60);
  assert.deepEqual(new Set(statuses), new Set([200]));
  assert.deepEqual(
    backends.map((b) => b.seen.length),
    [10, 20, 30, 0],
  );
  for (const [i, backend] of backends.slice(0, 3).entries()) {
    assert.equal(backend.seen[0]!.headers.host, hostPort(backend.url), `target ${i} gets its own host:port as Host`);
    assert.equal(backend.seen[0]!.url, '/hello');
  }
});

test('round-robin spreads equal weights evenly and keeps its turn across keep-alive connections', async (t) => {
  const backends = await Promise.all([echoBackend(t), echoBackend(t), echoBackend(t)]);
  const gw = await gatewayWith(t, balanced(backends.map((b) => ({ target: hostPort(b.url) }))));
  await sequential(`${gw.proxy}/`, 30);
  assert.deepEqual(
    backends.map((b) => b.seen.length),
    [10, 10, 10],
  );
});

test('a refused target is skipped on retry: the next target answers (with retries 0 the refused one fails its share)', async (t) => {
  const backend = await echoBackend(t);
  const refused = `127.0.0.1:${await freePort()}`;
  const targets = [{ target: refused }, { target: hostPort(backend.url) }];
  const retrying = await gatewayWith(t, balanced(targets, { retries: 1 }));
  assert.deepEqual(await sequential(`${retrying.proxy}/`, 10), Array(10).fill(200));
  assert.equal(backend.seen.length, 10);

  const once = await gatewayWith(t, balanced(targets, { retries: 0 }));
  const statuses = await sequential(`${once.proxy}/`, 10);
  assert.equal(statuses.filter((s) => s === 502).length, 5);
  assert.equal(statuses.filter((s) => s === 200).length, 5);
});

test('host_header and preserve_host decide the Host a target gets', async (t) => {
  const backend = await echoBackend(t);
  const doc = balanced([{ target: hostPort(backend.url) }]);
  (doc.upstreams[0] as Record<string, unknown>).host_header = 'api.internal';
  const gw = await gatewayWith(t, doc);
  await sequential(`${gw.proxy}/`, 1);
  assert.equal(backend.seen[0]!.headers.host, 'api.internal');
  const preserved = balanced([{ target: hostPort(backend.url) }]);
  (preserved.services[0]!.routes[0] as Record<string, unknown>).preserve_host = true;
  const gw2 = await gatewayWith(t, preserved);
  await sequential(`${gw2.proxy}/`, 1, { headers: { host: 'client.example' } });
  assert.equal(backend.seen[1]!.headers.host, 'client.example');
});

/** Kong's documentation example (load balancing with upstreams and targets), plus a decK-style dump and top-level targets. */
const KONG_DOCS_UPSTREAMS = `_format_version: "3.0"
services:
- name: example_service
  host: example_upstream
  protocol: http
  routes:
  - name: example_route
    paths:
    - /mock
upstreams:
- name: example_upstream
  targets:
  - target: httpbin.konghq.com:80
    weight: 100
  - target: httpbun.com:80
    weight: 100
- name: dumped
  algorithm: round-robin
  hash_fallback: none
  hash_on: none
  hash_on_cookie_path: /
  healthchecks:
    active:
      concurrency: 10
      healthy:
        http_statuses: [200, 302]
        interval: 0
        successes: 0
      http_path: /
      https_verify_certificate: true
      timeout: 1
      type: http
      unhealthy:
        http_failures: 0
        http_statuses: [429, 404, 500, 501, 502, 503, 504, 505]
        interval: 0
        tcp_failures: 0
        timeouts: 0
    passive:
      healthy:
        http_statuses: [200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 300, 301, 302, 303, 304, 305, 306, 307, 308]
        successes: 0
      type: http
      unhealthy:
        http_failures: 0
        http_statuses: [429, 500, 503]
        tcp_failures: 0
        timeouts: 0
    threshold: 0
  slots: 10000
  use_srv_name: false
targets:
- upstream: dumped
  target: 10.0.0.7
- upstream: dumped
  target: "[::1]:9000"
  weight: 0
`;

test("a Kong 3.0 file with upstreams and targets (Kong's docs, a decK dump) loads, with Kong's defaults; GET /config reloads it", () => {
  const { entities, candidates } = load(KONG_DOCS_UPSTREAMS);
  assert.equal(entities.upstreams.length, 2);
  const [docs, dumped] = entities.upstreams;
  assert.equal(docs!.algorithm, 'round-robin');
  assert.equal(docs!.slots, 10000);
  assert.equal(docs!.hash_on, 'none');
  assert.equal(docs!.hash_on_cookie_path, '/');
  assert.equal(docs!.host_header, null);
  assert.deepEqual((docs!.healthchecks as { passive: { unhealthy: unknown } }).passive.unhealthy, {
    http_statuses: [429, 500, 503],
    tcp_failures: 0,
    timeouts: 0,
    http_failures: 0,
  });
  assert.deepEqual(docs!.healthchecks, dumped!.healthchecks);
  assert.match(docs!.id, /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.deepEqual(
    entities.targets.map((t) => [t.target, t.weight, t.upstream.id]),
    [
      ['httpbin.konghq.com:80', 100, docs!.id],
      ['httpbun.com:80', 100, docs!.id],
      ['10.0.0.7:8000', 100, dumped!.id],
      ['[::1]:9000', 0, dumped!.id],
    ],
  );
  const balancer = candidates.find((c) => c.service === entities.services[0])!.balancer!;
  assert.deepEqual(
    balancer.peers.map((p) => [p.service.host, p.service.port, p.hostHeader]),
    [
      ['httpbin.konghq.com', 80, 'httpbin.konghq.com'],
      ['httpbun.com', 80, 'httpbun.com'],
    ],
  );
  // Stable ids: the same file gives the same ids; the flat form GET /config returns loads to the same entities.
  assert.deepEqual(
    load(KONG_DOCS_UPSTREAMS).entities.targets.map((t) => t.id),
    entities.targets.map((t) => t.id),
  );
  const again = load(toDeclarativeYaml(entities)).entities;
  assert.deepEqual(again.upstreams, entities.upstreams);
  assert.deepEqual(again.targets, entities.targets);
});

test('invalid upstreams and targets fail with the path of the bad key', () => {
  const doc = (upstream: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    _format_version: '3.0',
    upstreams: [{ name: 'u', ...upstream }],
    ...extra,
  });
  assert.deepEqual(errorsOf(doc({ algorithm: 'consistent-hashing' })), [
    "upstreams[0].algorithm: not supported by offcloud's gateway (algorithm 'consistent-hashing'; only round-robin is offered)",
  ]);
  assert.deepEqual(errorsOf(doc({ algorithm: 'fastest' })), [
    'upstreams[0].algorithm: expected one of: round-robin, consistent-hashing, least-connections, latency',
  ]);
  assert.deepEqual(errorsOf(doc({ hash_on: 'header', hash_on_header: 'x-user' })), [
    "upstreams[0].hash_on: not supported by offcloud's gateway (hashing is for the consistent-hashing algorithm; only round-robin is offered)",
  ]);
  assert.deepEqual(errorsOf(doc({ healthchecks: { passive: { unhealthy: { tcp_failures: 3 } }, active: { healthy: { interval: 5 } } } })), [
    "upstreams[0].healthchecks.active.healthy.interval: not supported by offcloud's gateway (active health checks); only 0 (off) is accepted",
  ]);
  assert.deepEqual(errorsOf(doc({ healthchecks: { passive: { unhealthy: { timeouts: -1, typo: 1 } } } })), [
    'upstreams[0].healthchecks.passive.unhealthy.typo: unknown field',
    'upstreams[0].healthchecks.passive.unhealthy.timeouts: value should be between 0 and 255',
  ]);
  assert.deepEqual(errorsOf(doc({ slots: 5, targets: [{ target: 'bad host!', weight: 70000 }, { weight: 1 }] })), [
    'upstreams[0].slots: value should be between 10 and 65536',
    "upstreams[0].targets[0].target: Invalid target ('bad host!'); not a valid hostname or ip address",
    'upstreams[0].targets[0].weight: value should be between 0 and 65535',
    'upstreams[0].targets[1].target: required field missing',
  ]);
  assert.deepEqual(errorsOf({ _format_version: '3.0', upstreams: [{ name: '10.0.0.1' }, {}] }), [
    "upstreams[0].name: Invalid name ('10.0.0.1'); must be a valid hostname",
    'upstreams[1].name: required field missing',
  ]);
  assert.deepEqual(errorsOf(doc({ targets: [{ target: 'a:80' }, { target: 'a:80' }] })), [
    "upstreams[0].targets[1].target: uniqueness violation: 'a:80 in upstream " +
      String(load({ _format_version: '3.0', upstreams: [{ name: 'u' }] }).entities.upstreams[0]!.id) +
      "' is also used by upstreams[0].targets[0]",
  ]);
  assert.deepEqual(errorsOf({ _format_version: '3.0', targets: [{ target: 'a:80', upstream: 'nope' }, { target: 'b' }] }), [
    "targets[0].upstream: references a upstream that does not exist: 'nope'",
    'targets[1].upstream: required field missing',
  ]);
  assert.deepEqual(errorsOf(doc({ use_srv_name: true, client_certificate: { id: 'x' } })), [
    "upstreams[0].use_srv_name: not supported by offcloud's gateway (SRV records are not looked up)",
    "upstreams[0].client_certificate: not supported by offcloud's gateway (upstream client certificates)",
  ]);
});

const grpcDoc = (url: string) => ({
  _format_version: '3.0',
  services: [
    {
      name: 'greeter',
      url,
      routes: [
        { name: 'grpc', protocols: ['grpc'], paths: ['/helloworld.Greeter'] },
        { name: 'grpcs', protocols: ['grpcs'], hosts: ['secure.grpc'] },
      ],
    },
  ],
});

test("A.4 row 'gRPC-only route, non-gRPC request': 415 Non-gRPC request matched gRPC route, in Kong's error shape", async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, grpcDoc(backend.url));
  for (const [path, headers] of [
    ['/helloworld.Greeter/SayHello', { 'content-type': 'application/json' }],
    ['/helloworld.Greeter/SayHello', {}],
    ['/', { host: 'secure.grpc' }],
  ] as const) {
    const res = await request(`${gw.proxy}${path}`, { method: 'POST', headers, body: '{}' });
    assert.equal(res.statusCode, 415);
    const body = (await res.body.json()) as { message: string; request_id: string };
    assert.equal(body.message, 'Non-gRPC request matched gRPC route');
    assert.equal(body.request_id, res.headers['x-kong-request-id']);
  }
  const text = await request(`${gw.proxy}/helloworld.Greeter/SayHello`, { headers: { accept: 'text/plain' } });
  assert.equal(text.statusCode, 415);
  assert.match(await text.body.text(), /^Non-gRPC request matched gRPC route\nrequest_id: [0-9a-f]{32}\n$/);
  assert.equal(backend.seen.length, 0);
});

test("a gRPC request over this HTTP/1.1 listener gets Kong's 426 Please use HTTP2 protocol (gRPC is not proxied)", async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, grpcDoc(backend.url));
  for (const contentType of ['application/grpc', 'application/grpc+proto', 'application/grpc-web']) {
    const res = await request(`${gw.proxy}/helloworld.Greeter/SayHello`, { method: 'POST', headers: { 'content-type': contentType }, body: Buffer.alloc(5) });
    assert.equal(res.statusCode, 426);
    assert.equal(res.headers.upgrade, 'HTTP/2');
    assert.equal(((await res.body.json()) as { message: string }).message, 'Please use HTTP2 protocol');
  }
  assert.equal(backend.seen.length, 0);
});

test("grpc routes follow Kong's subschema: strip_path false by default and never true, no methods, no mixing with http", () => {
  const route = (extra: Record<string, unknown>) => ({
    _format_version: '3.0',
    services: [{ name: 's', url: 'http://h', routes: [{ protocols: ['grpc'], ...extra }] }],
  });
  assert.equal(load(route({ paths: ['/a'] })).entities.routes[0]!.strip_path, false);
  assert.deepEqual(errorsOf(route({ paths: ['/a'], strip_path: true, methods: ['POST'] })), [
    "services[0].routes[0].strip_path: cannot set 'strip_path' when 'protocols' is 'grpc' or 'grpcs'",
    "services[0].routes[0].methods: cannot set 'methods' when 'protocols' is 'grpc' or 'grpcs'",
  ]);
  assert.deepEqual(errorsOf(route({ hosts: [] })), ["services[0].routes[0]: must set one of 'hosts', 'headers', 'paths' when 'protocols' is 'grpc'"]);
  assert.deepEqual(errorsOf(route({ protocols: ['grpcs'] })), [
    "services[0].routes[0]: must set one of 'hosts', 'headers', 'paths' when 'protocols' is 'grpcs'",
  ]);
  assert.deepEqual(errorsOf(route({ paths: ['/a'], protocols: ['grpc', 'https'] })), [
    "services[0].routes[0].protocols: these sets are mutually exclusive: ('http', 'https'), ('grpc', 'grpcs')",
  ]);
  assert.deepEqual(errorsOf(route({ paths: ['/a'], protocols: ['tcp'] })), ['services[0].routes[0].protocols[0]: expected one of: http, https, grpc, grpcs']);
});

test("admin API: Kong's upstream and target paths", async (t) => {
  const backend = await echoBackend(t);
  const doc = balanced([{ target: hostPort(backend.url), weight: 5 }, { target: 'localhost' }]);
  const gw = await gatewayWith(t, doc);
  const get = async (path: string) => {
    const res = await request(`${gw.admin}${path}`);
    return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
  };
  const list = await get('/upstreams');
  const upstreams = list.body.data as { id: string; name: string; algorithm: string }[];
  assert.deepEqual(
    upstreams.map((u) => [u.name, u.algorithm]),
    [['pool', 'round-robin']],
  );
  const id = upstreams[0]!.id;
  assert.equal((await get(`/upstreams/pool`)).body.id, id);
  assert.equal((await get(`/upstreams/${id}`)).body.name, 'pool');
  const targets = (await get(`/upstreams/${id}/targets`)).body.data as { id: string; target: string; weight: number; upstream: { id: string } }[];
  assert.deepEqual(
    targets.map((x) => [x.target, x.weight, x.upstream.id]),
    [
      [hostPort(backend.url), 5, id],
      ['localhost:8000', 100, id],
    ],
  );
  assert.equal((await get(`/upstreams/pool/targets/all`)).body.data instanceof Array, true);
  assert.equal((await get(`/upstreams/pool/targets/localhost:8000`)).body.id, targets[1]!.id);
  assert.equal((await get(`/upstreams/pool/targets/${targets[0]!.id}`)).body.target, hostPort(backend.url));
  const health = (await get('/upstreams/pool/health')).body.data as { health: string }[];
  assert.deepEqual(
    health.map((h) => h.health),
    ['HEALTHCHECKS_OFF', 'HEALTHCHECKS_OFF'],
  );
  for (const path of ['/upstreams/nope', '/upstreams/nope/targets', '/upstreams/pool/targets/nope:1']) assert.equal((await get(path)).status, 404);
  // The whole configuration, upstreams included, goes back in through POST /config.
  const config = (await get('/config')).body.config as string;
  const reload = await request(`${gw.admin}/config`, { method: 'POST', headers: { 'content-type': 'text/yaml' }, body: config });
  assert.equal(reload.statusCode, 201);
  const reloaded = (await reload.body.json()) as { upstreams: Record<string, unknown>; targets: Record<string, unknown> };
  assert.deepEqual(Object.keys(reloaded.upstreams), [id]);
  assert.equal(Object.keys(reloaded.targets).length, 2);
});
