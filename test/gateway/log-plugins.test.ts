/** file-log and http-log: Kong's log entry for every request, written to a file or sent to a collector. */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { request } from 'undici';
import { tempDataDir } from '../helpers/index.ts';
import { echoBackend, errorsOf, gatewayWith } from './helpers.ts';

/** Waits (polling) until `read` gives a value; fails after a few seconds. */
async function eventually<T>(read: () => Promise<T | undefined> | T | undefined): Promise<T> {
  for (let i = 0; i < 500; i++) {
    const value = await read();
    if (value !== undefined) return value;
    await delay(10);
  }
  assert.fail('the log entries did not come');
}

/** A collector that records every body it is sent, answering with the statuses given in turn (then 200). */
async function collector(t: Parameters<typeof echoBackend>[0], statuses: number[] = []) {
  const bodies: { headers: Record<string, unknown>; body: unknown; method: string }[] = [];
  const server = await echoBackend(t, (req, res, body) => {
    const status = statuses.shift() ?? 200;
    if (status === 200) bodies.push({ headers: req.headers, body: JSON.parse(body.toString()), method: req.method! });
    res.writeHead(status).end();
  });
  return { url: server.url, bodies, seen: server.seen };
}

test("file-log: one JSON line per request in Kong's shape, authorization redacted, refusals logged too; a bad path is refused", async (t) => {
  const backend = await echoBackend(t);
  const path = join(await tempDataDir(t), 'kong-requests.log');
  const gw = await gatewayWith(t, {
    _format_version: '3.0',
    services: [
      {
        name: 'orders',
        url: `${backend.url}/v1`,
        routes: [{ name: 'orders', paths: ['/orders'] }],
        plugins: [{ name: 'file-log', config: { path } }, { name: 'key-auth' }],
      },
    ],
    consumers: [{ username: 'shop', keyauth_credentials: [{ key: 'k1' }] }],
  });
  await (await request(`${gw.proxy}/orders/7?a=1&a=2&flag`, { headers: { apikey: 'k1', authorization: 'Bearer secret' } })).body.dump();
  await (await request(`${gw.proxy}/orders/8`)).body.dump();
  const lines = await eventually(async () => {
    const text = await readFile(path, 'utf8').catch(() => '');
    const found = text.split('\n').filter(Boolean);
    return found.length === 2 ? found.map((l) => JSON.parse(l)) : undefined;
  });
  const [ok, refused] = lines;
  assert.equal(ok.request.method, 'GET');
  assert.equal(ok.request.uri, '/orders/7?a=1&a=2&flag');
  assert.match(ok.request.url, /^http:\/\/127\.0\.0\.1:\d+\/orders\/7\?a=1&a=2&flag$/);
  assert.deepEqual(ok.request.querystring, { a: ['1', '2'], flag: true });
  assert.equal(ok.request.headers.authorization, 'REDACTED');
  assert.equal(ok.request.headers.apikey, 'k1');
  assert.equal(ok.upstream_uri, '/v1/7?a=1&a=2&flag');
  assert.equal(ok.response.status, 200);
  assert.equal(ok.response.headers['content-type'], 'application/json');
  assert.equal(ok.route.name, 'orders');
  assert.equal(ok.service.name, 'orders');
  assert.equal(ok.consumer.username, 'shop');
  assert.equal(ok.authenticated_entity.consumer_id, ok.consumer.id);
  assert.equal(ok.client_ip, '127.0.0.1');
  assert.equal(ok.source, 'upstream');
  assert.ok(ok.latencies.request >= ok.latencies.proxy && ok.latencies.proxy >= 0);
  assert.ok(Math.abs(ok.started_at - Date.now()) < 60_000);
  assert.deepEqual([refused.response.status, refused.source, refused.latencies.proxy, refused.upstream_uri], [401, 'kong', -1, '']);
  assert.equal(refused.consumer, undefined);
  assert.deepEqual(errorsOf({ _format_version: '3.0', plugins: [{ name: 'file-log', config: { path: '/tmp/*.log' } }] }), [
    'plugins[0].config.path: not a valid filename',
  ]);
  assert.deepEqual(errorsOf({ _format_version: '3.0', plugins: [{ name: 'file-log', config: {} }] }), ['plugins[0].config.path: required field missing']);
});

test('http-log: one entry per POST by default, custom headers and Basic from the URL; batches as arrays; a failed send is retried', async (t) => {
  const backend = await echoBackend(t);
  const single = await collector(t);
  const batched = await collector(t, [500]);
  const withUser = new URL(single.url);
  withUser.username = 'logger';
  withUser.password = 'p@ss';
  const gw = await gatewayWith(t, {
    _format_version: '3.0',
    services: [
      {
        name: 's',
        url: backend.url,
        routes: [
          {
            name: 'one',
            paths: ['/one'],
            plugins: [{ name: 'http-log', config: { http_endpoint: `${withUser.href}logs`, method: 'PUT', headers: { 'x-source': 'kong' } } }],
          },
          {
            name: 'many',
            paths: ['/many'],
            plugins: [
              { name: 'http-log', config: { http_endpoint: batched.url, queue: { max_batch_size: 2, max_coalescing_delay: 60, initial_retry_delay: 0.01 } } },
            ],
          },
        ],
      },
    ],
  });
  await (await request(`${gw.proxy}/one/a`)).body.dump();
  const [entry] = await eventually(() => (single.bodies.length === 1 ? single.bodies : undefined));
  assert.equal(entry!.method, 'PUT');
  assert.equal(single.seen[0]!.url, '/logs');
  assert.equal(entry!.headers['x-source'], 'kong');
  assert.equal(entry!.headers['content-type'], 'application/json');
  assert.equal(entry!.headers.authorization, `Basic ${Buffer.from('logger:p@ss').toString('base64')}`);
  assert.deepEqual([(entry!.body as { route: { name: string } }).route.name, (entry!.body as { upstream_uri: string }).upstream_uri], ['one', '/a']);

  await (await request(`${gw.proxy}/many/1`)).body.dump();
  await (await request(`${gw.proxy}/many/2`)).body.dump();
  const [batch] = await eventually(() => (batched.bodies.length === 1 ? batched.bodies : undefined));
  assert.ok(Array.isArray(batch!.body));
  assert.deepEqual(
    (batch!.body as { upstream_uri: string }[]).map((e) => e.upstream_uri),
    ['/1', '/2'],
  );
  assert.equal(batched.seen.length, 2, 'the first send got a 500 and was tried again');

  const errors = errorsOf({
    _format_version: '3.0',
    plugins: [{ name: 'http-log', config: { http_endpoint: 'ftp://logs', method: 'GET', queue: { max_batch_size: 0 } } }],
  });
  assert.deepEqual(errors, [
    "plugins[0].config.http_endpoint: invalid scheme: 'ftp'",
    'plugins[0].config.method: expected one of: POST, PUT, PATCH',
    'plugins[0].config.queue.max_batch_size: value should be between 1 and 1000000',
  ]);
});
