import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inflateSync } from 'node:zlib';
import makeMdns from 'multicast-dns';
import type { Answer } from 'dns-packet';
import { quiet, tempDataDir } from '../helpers/index.ts';
import { startDevSvc } from '../../src/devices/devsvc-server.ts';
import { startDevData, NO_DATA_SENTENCE } from '../../src/devices/devdata-server.ts';
import { devdata as devdataComponent } from '../../src/devices/index.ts';
import { baseOf, get, lifo, spawnDevSvc, stop, uniqueServiceName } from './helpers.ts';
import { mergeFacts } from '../../src/common/facts.ts';

const { port: _port, ...quietHost } = quiet;

/** Asks until `ready` (our data service's GET /ready) answers `status`, within a bound. */
async function readyBecomes(base: string, status: number, withinMs: number): Promise<number> {
  const until = Date.now() + withinMs;
  let last = 0;
  while (Date.now() < until && (last = (await get(`${base}/ready`)).status) !== status) await new Promise((r) => setTimeout(r, 50));
  return last;
}

test('R-DEV-7 mdns: the data service discovers DevSvc on one machine and says when it left', async (context) => {
  const t = lifo(context);
  const dataDir = await tempDataDir(t);
  const serviceName = uniqueServiceName();
  const devsvc = await startDevSvc({ ...quietHost, dataDir, serviceName, registry: 'mdns' });
  assert.equal(devsvc.facts!.devsvc!.registry, 'mdns', 'multicast works on this machine, so no static fallback');
  const devdata = await startDevData({ ...quiet, deadlineMs: 10_000, dataDir, serviceName, registry: 'mdns', registryRefreshMs: 500 });
  t.after(() => devdata.close());
  const base = baseOf(devdata.urls);
  assert.equal(await readyBecomes(base, 200, 5000), 200);
  const answer = await get(`${base}/data/sensor-1`);
  assert.equal(answer.body, `Device active:  true\n${NO_DATA_SENTENCE}\n`);
  assert.match(answer.node, new RegExp(`^${serviceName}-`));
  // Shutdown sends a goodbye (TTL 0): the watcher drops the node at once, not after 90 s.
  await devsvc.close();
  assert.equal(await readyBecomes(base, 503, 3000), 503);
  assert.equal((await get(`${base}/data/sensor-1`)).body, `Device active:  false\n${NO_DATA_SENTENCE}\n`);
});

test('R-DEV-7 mdns: go-micro layout — <node-id>.<service>.micro. with SRV, A and a hex(zlib(JSON)) TXT', async (context) => {
  const t = lifo(context);
  const dataDir = await tempDataDir(t);
  const serviceName = uniqueServiceName();
  const devsvc = await startDevSvc({ ...quietHost, dataDir, serviceName, registry: 'mdns' });
  t.after(() => devsvc.close());
  // A plain mDNS client, as go-micro's would ask: PTR <service>.micro.
  const mdns = makeMdns({ loopback: true, reuseAddr: true });
  t.after(() => new Promise<void>((resolve) => mdns.destroy(() => resolve())));
  const records = await new Promise<Answer[]>((resolve) => {
    mdns.on('response', (response) => {
      const all = [...response.answers, ...response.additionals];
      if (all.some((r) => r.type === 'SRV' && r.name.endsWith(`.${serviceName}.micro`))) resolve(all);
    });
    mdns.query({ questions: [{ name: `${serviceName}.micro`, type: 'PTR' }] });
  });
  const ptr = records.find((r) => r.type === 'PTR' && r.name === `${serviceName}.micro`);
  assert.ok(ptr && ptr.type === 'PTR');
  assert.match(ptr.data, new RegExp(`^${serviceName}-[0-9a-f-]{36}\\.${serviceName}\\.micro$`));
  const srv = records.find((r) => r.type === 'SRV' && r.name === ptr.data);
  const a = records.find((r) => r.type === 'A' && srv?.type === 'SRV' && r.name === srv.data.target);
  assert.ok(srv?.type === 'SRV' && a?.type === 'A');
  assert.equal(`${a.data}:${srv.data.port}`, devsvc.facts!.devsvc!.address);
  assert.equal(srv.ttl, 90, "go-micro's default registration TTL");
  const txt = records.find((r) => r.type === 'TXT' && r.name === ptr.data);
  assert.ok(txt?.type === 'TXT');
  const parts = (Array.isArray(txt.data) ? txt.data : [txt.data]).map(String);
  assert.ok(parts.every((p) => p.length <= 255 && /^[0-9a-f]+$/.test(p)));
  const decoded = JSON.parse(inflateSync(Buffer.from(parts.join(''), 'hex')).toString()) as {
    Service: string;
    Version: string;
    Metadata: Record<string, string>;
    Endpoints: unknown[];
  };
  assert.equal(decoded.Service, serviceName);
  assert.equal(decoded.Version, 'latest');
  assert.equal(decoded.Metadata.protocol, 'grpc');
  assert.equal(decoded.Endpoints.length, 1);
});

test('R-DEV-7 mdns: a replica killed with -9 (no goodbye) is forgotten when its TTL runs out', async (context) => {
  const t = lifo(context);
  const dataDir = await tempDataDir(t);
  const serviceName = uniqueServiceName();
  const replica = await spawnDevSvc(t, [
    '--data-dir',
    dataDir,
    '--service-name',
    serviceName,
    '--registry',
    'mdns',
    '--register-ttl',
    '5',
    '--register-interval',
    '1',
  ]);
  const devdata = await startDevData({ ...quiet, deadlineMs: 10_000, dataDir, serviceName, registry: 'mdns', registryRefreshMs: 300 });
  t.after(() => devdata.close());
  const base = baseOf(devdata.urls);
  assert.equal(await readyBecomes(base, 200, 5000), 200);
  assert.equal((await get(`${base}/data/sensor-1`)).node, replica.nodeId);
  await stop(replica.child, 'SIGKILL');
  assert.equal(await readyBecomes(base, 503, 15_000), 503);
});

test('R-DEV-7 mdns unavailable (an interface without multicast): DevSvc falls back to static and `offcloud up` wires the data service to it', async (context) => {
  const t = lifo(context);
  const dataDir = await tempDataDir(t);
  const serviceName = uniqueServiceName();
  // Linux's loopback interface has no MULTICAST flag: queries sent there never come back.
  const running = await startDevSvc({ ...quietHost, dataDir, serviceName, registry: 'mdns', mdnsInterface: '127.0.0.1' });
  t.after(() => running.close());
  assert.equal(running.facts!.devsvc!.registry, 'static');
  assert.match(running.urls[1]!.url, /^static addresses /);
  const wired = devdataComponent.wireUp!(mergeFacts([running]), new Map([['devsvc', running]]));
  assert.deepEqual(wired, { registry: 'static', serviceName, registryAddress: [running.facts!.devsvc!.address] });
  const data = await startDevData({ ...quiet, deadlineMs: 10_000, dataDir, ...wired });
  t.after(() => data.close());
  assert.equal((await get(`${baseOf(data.urls)}/data/sensor-1`)).body, `Device active:  true\n${NO_DATA_SENTENCE}\n`);
});
