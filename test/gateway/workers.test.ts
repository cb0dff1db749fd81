/** Several proxy processes (`--workers`): one port, shared exact rate-limit counters, reloads, replacement of a dead worker, TLS. */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { Agent, request } from 'undici';
import { awayFromWindowEdge, echoBackend, gatewayWith } from './helpers.ts';

const doc = (backendUrl: string, plugins: unknown[] = []) => ({
  _format_version: '3.0',
  services: [{ name: 'svc', url: backendUrl, retries: 0, routes: [{ name: 'all', paths: ['/'] }], plugins }],
  consumers: [{ username: 'ada', keyauth_credentials: [{ key: 'ada-key' }] }],
});

/** One request on a connection of its own, so requests spread over the workers. */
async function fresh(url: string, headers: Record<string, string> = {}) {
  const res = await request(url, { headers: { ...headers, connection: 'close' } });
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
}

async function workerPids(admin: string): Promise<number[]> {
  const res = await request(`${admin}/`);
  return ((await res.body.json()) as { pids: { workers: number[] } }).pids.workers;
}

test('workers: two proxy processes share the listener and both serve', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url), { workers: 2 });
  const pids = await workerPids(gw.admin);
  assert.equal(pids.length, 2);
  assert.ok(!pids.includes(process.pid), 'the workers are processes of their own');
  // Request ids begin with a per-process prefix: both processes answered.
  const prefixes = new Set<string>();
  for (let i = 0; i < 12; i++) {
    const res = await fresh(`${gw.proxy}/x${i}`);
    assert.equal(res.status, 200);
    prefixes.add(String(res.headers['x-kong-request-id']).slice(0, 16));
  }
  assert.equal(prefixes.size, 2);
  assert.equal(backend.seen.length, 12);
});

test('workers: rate-limiting (local) across three processes lets exactly the limit through out of 50 concurrent requests', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url, [{ name: 'key-auth' }, { name: 'rate-limiting', config: { minute: 7, policy: 'local' } }]), { workers: 3 });
  await awayFromWindowEdge(60_000, 5_000);
  const answers = await Promise.all(Array.from({ length: 50 }, () => fresh(`${gw.proxy}/limited`, { apikey: 'ada-key' })));
  const statuses = answers.map((a) => a.status);
  assert.equal(statuses.filter((s) => s === 200).length, 7);
  assert.equal(statuses.filter((s) => s === 429).length, 43);
  assert.equal(backend.seen.length, 7);
  const refused = answers.find((a) => a.status === 429)!;
  assert.equal(refused.headers['x-ratelimit-remaining-minute'], '0');
  assert.match(refused.body, /API rate limit exceeded/);
});

test('workers: POST /config reaches every worker', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, { _format_version: '3.0', services: [{ name: 'svc', url: backend.url, routes: [{ paths: ['/old'] }] }] }, { workers: 2 });
  const next = { _format_version: '3.0', services: [{ name: 'svc', url: `${backend.url}/moved`, routes: [{ paths: ['/new'] }] }] };
  const posted = await request(`${gw.admin}/config`, { method: 'POST', body: JSON.stringify(next), headers: { 'content-type': 'application/json' } });
  assert.equal(posted.statusCode, 201);
  await posted.body.dump();
  // The workers apply it as soon as the message reaches them; every fresh connection soon sees it.
  for (let i = 0; i < 10; i++) {
    let res = await fresh(`${gw.proxy}/new/a`);
    while (res.status === 404) res = await fresh(`${gw.proxy}/new/a`);
    assert.equal(res.status, 200);
    assert.equal(JSON.parse(res.body).url, '/moved/a');
  }
  assert.equal((await fresh(`${gw.proxy}/old`)).status, 404);
});

test('workers: a worker that dies is replaced and the gateway keeps serving', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url), { workers: 2 });
  const [victim] = await workerPids(gw.admin);
  process.kill(victim!, 'SIGKILL');
  let pids = await workerPids(gw.admin);
  while (pids.includes(victim!) || pids.length < 2) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    pids = await workerPids(gw.admin);
  }
  for (let i = 0; i < 6; i++) assert.equal((await fresh(`${gw.proxy}/after`)).status, 200);
});

test('workers: HTTPS is served by the workers with the local CA certificate', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url), { workers: 2 });
  const dispatcher = new Agent({ connect: { ca: await readFile(gw.caCertPath, 'utf8') } });
  t.after(() => dispatcher.close());
  for (let i = 0; i < 4; i++) {
    const res = await request(`${gw.https.replace('127.0.0.1', 'localhost')}/secure`, { dispatcher, headers: { connection: 'close' } });
    assert.equal(res.statusCode, 200);
    assert.equal(((await res.body.json()) as { url: string }).url, '/secure');
  }
});
