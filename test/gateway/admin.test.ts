/** The admin API (Kong's paths, DB-less): reading entities, and POST /config hot reloads. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PLUGINS } from '../../src/gateway/plugins/index.ts';
import { request } from 'undici';
import { parse } from 'yaml';
import { echoBackend, gatewayWith } from './helpers.ts';
import { readMetric } from '../helpers/index.ts';

function doc(url: string, path = '/v1', extra: Record<string, unknown> = {}) {
  return {
    _format_version: '3.0',
    services: [{ name: 'svc', url, routes: [{ name: 'r', paths: [path], plugins: [{ name: 'key-auth' }] }] }],
    consumers: [{ username: 'alice', keyauth_credentials: [{ key: 'alice-key' }] }],
    ...extra,
  };
}

async function json(url: string, init?: Parameters<typeof request>[1]) {
  const res = await request(url, init);
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
}

test("GET /, /status and the entity lists answer in Kong's shapes", async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url));
  const root = await json(`${gw.admin}/`);
  assert.equal(root.status, 200);
  assert.equal((root.body.configuration as { database: string }).database, 'off');
  assert.deepEqual(Object.keys((root.body.plugins as { available_on_server: object }).available_on_server).sort(), [...PLUGINS.keys()].sort());
  const proxied = await request(`${gw.proxy}/v1?apikey=alice-key`);
  await proxied.body.dump();
  const status = await json(`${gw.admin}/status`);
  const server = status.body.server as Record<string, number>;
  assert.ok(Number(server.total_requests) >= 1 && Number(server.connections_accepted) >= 1);
  assert.match(String(status.body.configuration_hash), /^[0-9a-f]{32}$/);

  const services = await json(`${gw.admin}/services`);
  assert.equal((services.body.data as { name: string }[])[0]!.name, 'svc');
  assert.equal(services.body.next, null);
  const byName = await json(`${gw.admin}/services/svc`);
  const routes = await json(`${gw.admin}/services/${String(byName.body.id)}/routes`);
  assert.equal((routes.body.data as { name: string }[])[0]!.name, 'r');
  assert.equal(((await json(`${gw.admin}/routes/r/plugins`)).body.data as { name: string }[])[0]!.name, 'key-auth');
  assert.equal(((await json(`${gw.admin}/consumers/alice/key-auth`)).body.data as { key: string }[])[0]!.key, 'alice-key');
  assert.equal(((await json(`${gw.admin}/plugins`)).body.data as unknown[]).length, 1);
  assert.equal(((await json(`${gw.admin}/key-auths`)).body.data as unknown[]).length, 1);
  const paged = await json(`${gw.admin}/consumers?size=1`);
  assert.equal((paged.body.data as unknown[]).length, 1);
  assert.deepEqual(await json(`${gw.admin}/services/nope`), { status: 404, body: { message: 'Not found' } });
  const write = await json(`${gw.admin}/services`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
  assert.equal(write.status, 405);
  const config = await json(`${gw.admin}/config`);
  const yaml = parse(String(config.body.config)) as { _format_version: string; services: { name: string }[] };
  assert.equal(yaml._format_version, '3.0');
  assert.equal(yaml.services[0]!.name, 'svc');
});

test('POST /config swaps the configuration without dropping a request in flight', async (t) => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const backend = await echoBackend(t, (req, res) => {
    if (req.url!.startsWith('/slow')) void released.then(() => res.end('slow done'));
    else res.end(`fast ${req.url}`);
  });
  const gw = await gatewayWith(t, doc(backend.url, '/v1'));
  const inFlight = request(`${gw.proxy}/v1/slow?apikey=alice-key`);
  while (backend.seen.length === 0) await new Promise((resolve) => setImmediate(resolve));

  const next = doc(`${backend.url}/slow`, '/v2');
  const reloaded = await json(`${gw.admin}/config`, { method: 'POST', body: JSON.stringify(next), headers: { 'content-type': 'application/json' } });
  assert.equal(reloaded.status, 201);
  assert.equal(Object.values(reloaded.body.services as object).length, 1);
  const old = await request(`${gw.proxy}/v1?apikey=alice-key`);
  assert.equal(old.statusCode, 404, 'the old route is gone');
  await old.body.dump();
  release();
  const finished = await inFlight;
  assert.equal(finished.statusCode, 200);
  assert.equal(await finished.body.text(), 'slow done');
  const fresh = await request(`${gw.proxy}/v2?apikey=alice-key`);
  assert.equal(fresh.statusCode, 200);
  assert.equal(await fresh.body.text(), 'slow done');
});

test('POST /config: YAML bodies, check_hash gives 304, form bodies are refused, an invalid document gives 400 and keeps the old one', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url));
  const yamlBody = `_format_version: "3.0"\nservices:\n- name: y\n  url: ${backend.url}\n  routes:\n  - paths: ["/yaml"]\n`;
  assert.equal((await request(`${gw.admin}/config`, { method: 'POST', body: yamlBody, headers: { 'content-type': 'text/yaml' } })).statusCode, 201);
  const same = await request(`${gw.admin}/config?check_hash=1`, { method: 'POST', body: yamlBody, headers: { 'content-type': 'text/yaml' } });
  assert.equal(same.statusCode, 304);
  await same.body.dump();
  // A form is what any web page can post here unasked; only JSON and YAML are taken.
  const form = await request(`${gw.admin}/config`, {
    method: 'POST',
    body: new URLSearchParams({ config: yamlBody.replace('/yaml', '/form') }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  assert.equal(form.statusCode, 415);
  await form.body.dump();

  const invalid = await json(`${gw.admin}/config?flatten_errors=1`, {
    method: 'POST',
    body: JSON.stringify({ _format_version: '3.0', services: [{ name: 'bad', url: backend.url, retries: 'ten', routes: [{ paths: ['nope'] }] }] }),
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(invalid.status, 400);
  assert.equal(invalid.body.name, 'invalid declarative configuration');
  assert.deepEqual(invalid.body.flattened_errors, [
    { path: 'services[0].retries', message: 'expected an integer' },
    { path: 'services[0].routes[0].paths[0]', message: 'should start with: / (fixed path) or ~/ (regex path)' },
  ]);
  const still = await request(`${gw.proxy}/yaml`);
  assert.equal(still.statusCode, 200, 'the last good configuration still serves');
  await still.body.dump();
});

test('POST /config from a web page is refused: form, text/plain and multipart bodies, a foreign Origin or Host; the configuration stays', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url));
  const { host } = new URL(gw.admin);
  const port = new URL(gw.admin).port;
  const takeover = `_format_version: "3.0"\nservices:\n- name: evil\n  url: ${backend.url}\n  routes:\n  - paths: ["/evil"]\n`;
  const attempts: [string, Record<string, string>, string, number][] = [
    ['form', { 'content-type': 'application/x-www-form-urlencoded' }, new URLSearchParams({ config: takeover }).toString(), 415],
    ['text/plain', { 'content-type': 'text/plain' }, takeover, 415],
    [
      'multipart',
      { 'content-type': 'multipart/form-data; boundary=b' },
      `--b\r\nContent-Disposition: form-data; name="config"\r\n\r\n${takeover}\r\n--b--\r\n`,
      415,
    ],
    ['foreign Origin', { 'content-type': 'text/yaml', origin: 'http://evil.example' }, takeover, 403],
    ['opaque Origin', { 'content-type': 'text/yaml', origin: 'null' }, takeover, 403],
    ['own host, other port as Origin', { 'content-type': 'text/yaml', origin: `http://127.0.0.1:${Number(port) + 1}` }, takeover, 403],
    ['DNS-rebound Host', { 'content-type': 'text/yaml', host: `evil.example:${port}` }, takeover, 403],
    ['Host with credentials', { 'content-type': 'text/yaml', host: `evil.example@${host}` }, takeover, 403],
  ];
  for (const [what, headers, body, status] of attempts) {
    const res = await request(`${gw.admin}/config`, { method: 'POST', headers, body });
    assert.equal(res.statusCode, status, what);
    assert.equal(typeof ((await res.body.json()) as { message: unknown }).message, 'string', what);
  }
  // A rebound name cannot read the configuration (it holds the API keys) either.
  const read = await request(`${gw.admin}/config`, { headers: { host: `evil.example:${port}` } });
  assert.equal(read.statusCode, 403);
  await read.body.dump();
  const evil = await request(`${gw.proxy}/evil`);
  assert.equal(evil.statusCode, 404, 'no attempt replaced the configuration');
  await evil.body.dump();
  // The admin API's own origin and names are served.
  for (const headers of [{ origin: `http://${host}` }, { host: `localhost:${port}` }]) {
    const own = await request(`${gw.admin}/config`, { method: 'POST', headers: { 'content-type': 'text/yaml', ...headers }, body: takeover });
    assert.equal(own.statusCode, 201, JSON.stringify(headers));
    await own.body.dump();
  }
});

test('metrics: GET /metrics on the admin API shows the proxy requests and connections beside its own requests', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url));
  for (const key of ['alice-key', 'alice-key', 'wrong']) await (await request(`${gw.proxy}/v1?apikey=${key}`)).body.dump();
  // The proxy's figures are those /status shows; read both and compare.
  const total = Number(((await json(`${gw.admin}/status`)).body.server as Record<string, number>).total_requests);
  assert.ok(total >= 3);
  assert.equal(await readMetric(gw.admin, 'offcloud_gateway_proxy_requests', { component: 'gateway' }), total);
  assert.ok(((await readMetric(gw.admin, 'offcloud_gateway_proxy_connections_accepted')) ?? 0) >= 1);
  assert.equal(await readMetric(gw.admin, 'offcloud_gateway_proxy_requests_in_flight'), 0);
  assert.ok(((await readMetric(gw.admin, 'offcloud_http_requests_total', { route: '/status', status: '200' })) ?? 0) >= 1);
});
