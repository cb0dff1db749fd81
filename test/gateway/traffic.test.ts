/**
 * What the admin API tells of the proxy's traffic: answers by route and
 * status and plugin rejections in /metrics, the last requests and a
 * consumer's rate-limit state under /_offcloud/, with one proxy process and
 * with two (each process counts, the admin API merges).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import type { RateLimitWindow as Window } from '../../src/gateway/plugins/rate-limiting/state.ts';
import type { RecentRequest } from '../../src/gateway/proxy/traffic.ts';
import { metricIn } from '../helpers/index.ts';
import { awayFromWindowEdge, echoBackend, gatewayWith, startRedis } from './helpers.ts';

const HOUR = 3_600_000;

function doc(url: string, limit: Record<string, unknown>) {
  return {
    _format_version: '3.0',
    services: [
      {
        name: 'svc',
        url,
        routes: [
          // Limited by IP (no authentication): not a consumer's limit.
          { name: 'open', paths: ['/open'], plugins: [{ name: 'rate-limiting', config: { hour: 1000 } }] },
          { name: 'guarded', paths: ['/guarded'], plugins: [{ name: 'key-auth' }, { name: 'rate-limiting', config: limit }] },
        ],
      },
    ],
    consumers: [
      { username: 'ada', keyauth_credentials: [{ key: 'ada-key' }] },
      { username: 'bob', keyauth_credentials: [{ key: 'bob-key' }] },
    ],
  };
}

/** One request on a connection of its own, so requests spread over the workers. */
async function call(url: string, headers: Record<string, string> = {}) {
  const res = await request(url, { headers: { ...headers, connection: 'close' } });
  await res.body.dump();
  return { status: res.statusCode, requestId: String(res.headers['x-kong-request-id']), headers: res.headers };
}

async function admin(url: string, headers: Record<string, string> = {}) {
  const res = await request(url, { headers });
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
}

/** As the admin API answers it: the time as ISO 8601. */
type Recent = Omit<RecentRequest, 'time'> & { time: string };

for (const workers of [1, 2]) {
  test(`metrics and recent requests with ${workers} proxy process(es): answers by route and status, key-auth and rate-limiting rejections`, async (t) => {
    const backend = await echoBackend(t);
    const gw = await gatewayWith(t, doc(backend.url, { year: 3 }), { workers });
    const before = Date.now();
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await call(`${gw.proxy}/open/${i}?apikey=secret`));
    for (let i = 0; i < 5; i++) answers.push(await call(`${gw.proxy}/guarded`, { apikey: 'ada-key' }));
    answers.push(
      await call(`${gw.proxy}/guarded`, { apikey: 'wrong' }),
      await call(`${gw.proxy}/guarded`, { apikey: 'wrong' }),
      await call(`${gw.proxy}/guarded`),
    );
    answers.push(await call(`${gw.proxy}/nowhere`));
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 200, 200, 200, 200, 200, 200, 429, 429, 401, 401, 401, 404],
    );
    // Request ids begin with a per-process prefix: with two workers, both answered some.
    assert.equal(new Set(answers.map((a) => a.requestId.slice(0, 16))).size, workers);

    const text = await (await request(`${gw.admin}/metrics`)).body.text();
    const responses = (route: string, status: string) =>
      metricIn(text, 'offcloud_gateway_proxy_responses_total', { service: route ? 'svc' : '', route, status });
    assert.equal(responses('open', '200'), 4);
    assert.equal(responses('guarded', '200'), 3);
    assert.equal(responses('guarded', '429'), 2);
    assert.equal(responses('guarded', '401'), 3);
    assert.equal(responses('', '404'), 1);
    const rejections = (plugin: string, status: string) =>
      metricIn(text, 'offcloud_gateway_plugin_rejections_total', { plugin, service: 'svc', route: 'guarded', status });
    assert.equal(rejections('rate-limiting', '429'), 2);
    assert.equal(rejections('key-auth', '401'), 3);
    assert.equal(metricIn(text, 'offcloud_gateway_plugin_rejections_total', { plugin: 'rate-limiting', route: 'open' }), undefined);

    const recent = await admin(`${gw.admin}/_offcloud/requests`);
    assert.equal(recent.status, 200);
    const listed = recent.body.data as Recent[];
    // Newest first, every request of every process, the query string left out.
    assert.deepEqual(
      listed.map((r) => r.request_id),
      answers.map((a) => a.requestId).reverse(),
    );
    const byId = new Map(listed.map((r) => [r.request_id, r]));
    const refused = byId.get(answers[7]!.requestId)!;
    assert.deepEqual(
      { method: refused.method, path: refused.path, route: refused.route, service: refused.service, consumer: refused.consumer, status: refused.status },
      { method: 'GET', path: '/guarded', route: 'guarded', service: 'svc', consumer: 'ada', status: 429 },
    );
    assert.equal(byId.get(answers[0]!.requestId)!.path, '/open/0');
    assert.equal(byId.get(answers[9]!.requestId)!.consumer, null);
    assert.deepEqual([byId.get(answers[12]!.requestId)!.route, byId.get(answers[12]!.requestId)!.status], [null, 404]);
    for (const r of listed) {
      assert.ok(r.latency_ms >= 0);
      assert.ok(Date.parse(r.time) >= before - 1 && Date.parse(r.time) <= Date.now() + 1, r.time);
    }
    assert.equal(((await admin(`${gw.admin}/_offcloud/requests?size=2`)).body.data as Recent[]).length, 2);
    assert.deepEqual(await admin(`${gw.admin}/_offcloud/requests?size=0`), { status: 400, body: { message: 'size must be an integer between 1 and 1000' } });
    // The admin API's own rules hold for its offcloud calls too.
    assert.equal((await admin(`${gw.admin}/_offcloud/requests`, { origin: 'http://evil.example' })).status, 403);
  });
}

test('a consumer rate-limit state (local policy, two workers): each window of the limits that count its requests, read without counting', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url, { hour: 10, year: 20 }), { workers: 2 });
  await awayFromWindowEdge(HOUR, 10_000);
  for (let i = 0; i < 4; i++) assert.equal((await call(`${gw.proxy}/guarded`, { apikey: 'ada-key' })).status, 200);
  assert.equal((await call(`${gw.proxy}/guarded`, { apikey: 'bob-key' })).status, 200);
  const state = await admin(`${gw.admin}/_offcloud/consumers/ada/rate-limits`);
  assert.equal(state.status, 200);
  assert.equal((state.body.consumer as { username: string }).username, 'ada');
  const windows = state.body.data as Window[];
  // The IP-limited route is not listed: its counters are not ada's.
  assert.deepEqual(
    windows.map((w) => [w.route.name, w.policy, w.limit_by, w.period, w.limit, w.used, w.remaining]),
    [
      ['guarded', 'local', 'consumer', 'hour', 10, 4, 6],
      ['guarded', 'local', 'consumer', 'year', 20, 4, 16],
    ],
  );
  const hourEnd = Math.ceil(Date.now() / HOUR) * HOUR;
  assert.equal(windows[0]!.window_end, new Date(hourEnd).toISOString());
  assert.equal(windows[1]!.window_end, `${new Date().getUTCFullYear() + 1}-01-01T00:00:00.000Z`);
  // Reading counted nothing: the next request sees the same usage plus itself.
  const next = await call(`${gw.proxy}/guarded`, { apikey: 'ada-key' });
  assert.equal(next.headers['x-ratelimit-remaining-hour'], '5');
  // By id too; an unknown consumer is the admin API's 404.
  const byId = await admin(`${gw.admin}/_offcloud/consumers/${(state.body.consumer as { id: string }).id}/rate-limits`);
  assert.deepEqual(
    (byId.body.data as Window[]).map((w) => w.used),
    [5, 5],
  );
  assert.deepEqual(await admin(`${gw.admin}/_offcloud/consumers/nobody/rate-limits`), {
    status: 404,
    body: { message: 'Not found: no consumer has the id or username "nobody"' },
  });
});

test('a consumer rate-limit state (redis policy, limit by credential): read from Redis without counting', async (t) => {
  const redis = await startRedis(t);
  const backend = await echoBackend(t);
  const limit = { hour: 10, limit_by: 'credential', policy: 'redis', redis: { host: '127.0.0.1', port: redis.port } };
  const gw = await gatewayWith(t, doc(backend.url, limit));
  await awayFromWindowEdge(HOUR, 10_000);
  for (let i = 0; i < 3; i++) assert.equal((await call(`${gw.proxy}/guarded`, { apikey: 'ada-key' })).status, 200);
  const read = async () => (await admin(`${gw.admin}/_offcloud/consumers/ada/rate-limits`)).body.data as Window[];
  const first = await read();
  assert.deepEqual(
    first.map((w) => [w.policy, w.limit_by, w.period, w.limit, w.used, w.remaining]),
    [['redis', 'credential', 'hour', 10, 3, 7]],
  );
  const credentials = (await admin(`${gw.admin}/consumers/ada/key-auth`)).body.data as { id: string }[];
  assert.equal(first[0]!.credential?.id, credentials[0]!.id);
  assert.deepEqual(
    (await read()).map((w) => w.used),
    [3],
  );
  assert.equal((await call(`${gw.proxy}/guarded`, { apikey: 'ada-key' })).headers['x-ratelimit-remaining-hour'], '6');
  // Redis gone: the admin API says so in its error shape.
  await redis.stop();
  const failed = await admin(`${gw.admin}/_offcloud/consumers/ada/rate-limits`);
  assert.equal(failed.status, 503);
  assert.match(String(failed.body.message), /cannot read the rate-limit counters .* from Redis/);
});
