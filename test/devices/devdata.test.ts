import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { connect } from 'node:net';
import { text } from 'node:stream/consumers';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { tempDataDir, quiet, readMetric } from '../helpers/index.ts';
import { startDevSvc } from '../../src/devices/devsvc-server.ts';
import { startDevData, NO_DATA_SENTENCE } from '../../src/devices/devdata-server.ts';
import { devSvcDefinition } from '../../src/devices/proto.ts';
import { addDevice, deviceFilePath } from '../../src/devices/store.ts';
import { devicesCommands } from '../../src/devices/commands.ts';
import { baseOf, freePort, get, lifo } from './helpers.ts';

const { port: _port, ...quietHost } = quiet;
const TEXT = 'text/plain; charset=utf-8';
const execFileAsync = promisify(execFile);
const answer = (active: boolean) => `Device active:  ${active}\n${NO_DATA_SENTENCE}\n`;

async function devsvcAndDevdata(t: Parameters<typeof tempDataDir>[0], extra: { deadlineMs?: number } = {}) {
  const dataDir = await tempDataDir(t);
  const devsvc = await startDevSvc({ ...quietHost, dataDir, registry: 'static' });
  t.after(() => devsvc.close());
  const devdata = await startDevData({ ...quiet, deadlineMs: 10_000, dataDir, registry: 'static', registryAddress: [devsvc.facts!.devsvc!.address], ...extra });
  t.after(() => devdata.close());
  return { dataDir, devsvc, base: baseOf(devdata.urls) };
}

test('R-DEV-2 R-DEV-3 R-DEV-4 active and inactive devices answer the two plain-text lines byte for byte', async (context) => {
  const t = lifo(context);
  const { base } = await devsvcAndDevdata(t);
  const active = await get(`${base}/data/sensor-1`);
  assert.equal(active.status, 200);
  assert.equal(active.type, TEXT);
  assert.equal(active.body, 'Device active:  true\nNo device data is returned by this service.\n');
  const inactive = await get(`${base}/data/sensor-2`);
  assert.equal(inactive.status, 200);
  assert.equal(inactive.body, answer(false));
  // Nothing but the flag: the body never carries the device's name or any record field.
  assert.ok(!active.body.includes('sensor-1'));
});

test('R-DEV-6 an unknown device answers false, with no error', async (context) => {
  const t = lifo(context);
  const { base } = await devsvcAndDevdata(t);
  const unknown = await get(`${base}/data/no-such-device`);
  assert.equal(unknown.status, 200);
  assert.equal(unknown.body, answer(false));
});

test('R-DEV-4 a flag changed with `offcloud devices set-active` is what the data service reports next', async (context) => {
  const t = lifo(context);
  const { base, dataDir } = await devsvcAndDevdata(t);
  assert.equal((await get(`${base}/data/sensor-2`)).body, answer(false));
  await devicesCommands.subcommands['set-active'].runTo(['sensor-2', 'true', '--data-dir', dataDir], { write: () => undefined });
  // DevSvc reloads the file on its change event; ask until it did (bounded).
  const until = Date.now() + 5000;
  let body = '';
  while (Date.now() < until && (body = (await get(`${base}/data/sensor-2`)).body) !== answer(true)) await new Promise((r) => setImmediate(r));
  assert.equal(body, answer(true));
  await addDevice(deviceFilePath(dataDir), 'new-one', true);
  const until2 = Date.now() + 5000;
  while (Date.now() < until2 && (body = (await get(`${base}/data/new-one`)).body) !== answer(true)) await new Promise((r) => setImmediate(r));
  assert.equal(body, answer(true));
});

test('R-DEV-5 DevSvc stopped: the data service answers false, status 200, no error text', async (context) => {
  const t = lifo(context);
  const { base, devsvc } = await devsvcAndDevdata(t);
  assert.equal((await get(`${base}/data/sensor-1`)).body, answer(true));
  await devsvc.close();
  const after = await get(`${base}/data/sensor-1`);
  assert.equal(after.status, 200);
  assert.equal(after.body, answer(false));
  // Nothing listens on the address at all.
  const dataDir = await tempDataDir(t);
  const nowhere = await startDevData({ ...quiet, deadlineMs: 10_000, dataDir, registry: 'static', registryAddress: [`127.0.0.1:${await freePort()}`] });
  t.after(() => nowhere.close());
  const none = await get(`${baseOf(nowhere.urls)}/data/sensor-1`);
  assert.deepEqual([none.status, none.body], [200, answer(false)]);
});

test('R-DEV-5 DevSvc slower than the deadline: false, within about the deadline', async (context) => {
  const t = lifo(context);
  // A DevSvc that answers too late (true, which must not be reported).
  const slow = new Server();
  const pending = new Set<NodeJS.Timeout>();
  slow.addService(devSvcDefinition, {
    Get: (_call: unknown, callback: (err: null, device: { name: string; active: boolean }) => void) => {
      const timer = setTimeout(() => {
        pending.delete(timer);
        callback(null, { name: 'sensor-1', active: true });
      }, 4000);
      pending.add(timer);
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    slow.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  t.after(() => {
    for (const timer of pending) clearTimeout(timer);
    slow.forceShutdown();
  });
  const dataDir = await tempDataDir(t);
  const devdata = await startDevData({ ...quiet, dataDir, registry: 'static', registryAddress: [`127.0.0.1:${port}`], deadlineMs: 200 });
  t.after(() => devdata.close());
  const started = Date.now();
  const answered = await get(`${baseOf(devdata.urls)}/data/sensor-1`);
  assert.deepEqual([answered.status, answered.body], [200, answer(false)]);
  assert.ok(Date.now() - started < 3500, 'the answer came before the slow DevSvc replied');
});

test('fuzz: junk names get 400 in plain text, and the service keeps serving', async (context) => {
  const t = lifo(context);
  const { base } = await devsvcAndDevdata(t);
  const junk = [
    '/data/a/b', // a slash: two segments
    '/data/a%2Fb', // an encoded slash
    '/data/%00', // NUL
    '/data/x%00y',
    '/data/%FF%FE', // not UTF-8
    '/data/%E2%82', // truncated UTF-8
    '/data/%zz', // broken percent-encoding
    `/data/${'a'.repeat(10_240)}`, // 10 kB
    '/data/', // empty
    '/data/a%20b', // space
    '/data/%3Cscript%3E',
  ];
  for (const path of junk) {
    const response = await get(base + path);
    assert.equal(response.status, 400, path.slice(0, 40));
    assert.equal(response.type, TEXT);
    assert.match(response.body, /^invalid device name: /);
  }
  // What URL parsers would normalise away: sent as-is by curl.
  for (const path of ['/data/..', '/data/./', '/data/%2e%2E']) {
    const curl = await execFileAsync('curl', ['-s', '--path-as-is', '-w', '\n%{http_code}', base + path], { encoding: 'utf8' });
    assert.match(curl.stdout, /^invalid device name: .*\n400$/s, path);
  }
  // Raw non-UTF-8 bytes in the request line (no client library sends them): 400 or false, never a crash.
  const socket = connect(Number(new URL(base).port), '127.0.0.1');
  socket.end(Buffer.concat([Buffer.from('GET /data/'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from(' HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')]));
  const raw = (await text(socket)).toString();
  assert.ok(/^HTTP\/1\.1 400/.test(raw) || raw.endsWith(answer(false)), raw.slice(0, 200));
  for (const method of ['POST', 'PUT', 'DELETE']) {
    const { request } = await import('undici');
    const response = await request(`${base}/data/sensor-1`, { method, body: 'x'.repeat(5000) });
    assert.equal(response.statusCode, 405);
    assert.equal(response.headers.allow, 'GET');
    await response.body.text();
  }
  assert.equal((await get(`${base}/nothing`)).status, 404);
  // Names with the allowed punctuation and other scripts are looked up (unknown → false).
  assert.equal((await get(`${base}/data/${encodeURIComponent("dév-ïce_1.2:3@x~y+z=a,b!c$d'e(f)g*")}`)).body, answer(false));
  assert.equal((await get(`${base}/data/sensor-1?x=%ff`)).body, answer(true));
  assert.equal((await get(`${base}/health`)).status, 200);
  assert.equal((await get(`${base}/ready`)).status, 200);
});

test('metrics: device lookups are counted by outcome (active, inactive, failed)', async (context) => {
  const t = lifo(context);
  const { base, devsvc } = await devsvcAndDevdata(t, { deadlineMs: 2_000 });
  await get(`${base}/data/sensor-1`);
  await get(`${base}/data/sensor-1`);
  await get(`${base}/data/sensor-2`);
  assert.equal(await readMetric(base, 'offcloud_devdata_lookups_total', { outcome: 'active' }), 2);
  assert.equal(await readMetric(base, 'offcloud_devdata_lookups_total', { outcome: 'inactive' }), 1);
  await devsvc.close();
  assert.equal((await get(`${base}/data/sensor-1`)).body, answer(false));
  assert.equal(await readMetric(base, 'offcloud_devdata_lookups_total', { outcome: 'failed' }), 1);
  assert.equal(await readMetric(base, 'offcloud_http_requests_total', { route: '/data/*', status: '200' }), 4);
});
