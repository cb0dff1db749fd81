import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Etcd3 } from 'etcd3';
import { quiet, tempDataDir } from '../helpers/index.ts';
import { startDevSvc } from '../../src/devices/devsvc-server.ts';
import { startDevData, NO_DATA_SENTENCE } from '../../src/devices/devdata-server.ts';
import { StartupError } from '../../src/common/errors.ts';
import { baseOf, freePort, get, lifo, spawnDevSvc, startEtcd, stop, uniqueServiceName } from './helpers.ts';

const execFileAsync = promisify(execFile);
const { port: _port, ...quietHost } = quiet;
const TRUE = `Device active:  true\n${NO_DATA_SENTENCE}\n`;

function etcdClient(t: { after(fn: () => unknown): void }, address: string): Etcd3 {
  const client = new Etcd3({ hosts: `http://${address}` });
  t.after(() => client.close());
  return client;
}

test('R-DEV-7 etcd: a node is stored under /micro/registry/<service>/<node-id> with a lease, and removed on shutdown', async (context) => {
  const t = lifo(context);
  const dataDir = await tempDataDir(t);
  const etcd = await startEtcd(t, dataDir);
  const serviceName = uniqueServiceName();
  const devsvc = await startDevSvc({ ...quietHost, dataDir, serviceName, registry: 'etcd', registryAddress: [etcd], registerTtl: 5, registerInterval: 1 });
  const client = etcdClient(t, etcd);
  const listing = await client.getAll().prefix(`/micro/registry/${serviceName}/`).exec();
  assert.equal(listing.kvs.length, 1);
  const kv = listing.kvs[0]!;
  const record = JSON.parse(kv.value.toString()) as {
    name: string;
    version: string;
    nodes: Array<{ id: string; address: string; metadata: Record<string, string> }>;
  };
  assert.equal(kv.key.toString(), `/micro/registry/${serviceName}/${record.nodes[0]!.id}`);
  assert.match(record.nodes[0]!.id, new RegExp(`^${serviceName}-[0-9a-f-]{36}$`));
  assert.equal(record.name, serviceName);
  assert.equal(record.nodes[0]!.address, devsvc.facts!.devsvc!.address);
  assert.equal(record.nodes[0]!.metadata.protocol, 'grpc');
  assert.notEqual(String(kv.lease), '0', 'the key is held by a lease');
  const lease = await client.leaseClient.leaseTimeToLive({ ID: kv.lease });
  assert.equal(String(lease.grantedTTL), '5', 'the lease has the registration TTL');
  await devsvc.close();
  assert.equal((await client.getAll().prefix(`/micro/registry/${serviceName}/`).keys()).length, 0);
});

test('R-DEV-7 etcd: two replicas share the calls; kill -9 one, its TTL runs out and every call goes to the other; a restarted replica is picked up', async (context) => {
  const t = lifo(context);
  const dataDir = await tempDataDir(t);
  const etcd = await startEtcd(t, dataDir);
  const serviceName = uniqueServiceName();
  const args = [
    '--data-dir',
    dataDir,
    '--service-name',
    serviceName,
    '--registry',
    'etcd',
    '--registry-address',
    etcd,
    '--register-ttl',
    '3',
    '--register-interval',
    '1',
  ];
  const [a, b] = await Promise.all([spawnDevSvc(t, args), spawnDevSvc(t, args)]);
  const devdata = await startDevData({ ...quiet, deadlineMs: 10_000, dataDir, serviceName, registry: 'etcd', registryAddress: [etcd] });
  t.after(() => devdata.close());
  const base = baseOf(devdata.urls);

  const servedBy = async (n: number) => {
    const nodes: string[] = [];
    for (let i = 0; i < n; i++) {
      const answer = await get(`${base}/data/sensor-1`);
      assert.deepEqual([answer.status, answer.body], [200, TRUE], 'no failed request reaches the client');
      nodes.push(answer.node);
    }
    return nodes;
  };
  const spread = await servedBy(10);
  assert.deepEqual(new Set(spread), new Set([a.nodeId, b.nodeId]), 'round-robin over both replicas');

  const client = etcdClient(t, etcd);
  const watcher = await client.watch().prefix(`/micro/registry/${serviceName}/`).create();
  t.after(() => watcher.cancel());
  const aExpired = new Promise<void>((resolve) => watcher.on('delete', (kv) => kv.key.toString().endsWith(a.nodeId) && resolve()));
  await stop(a.child, 'SIGKILL');
  // Until the lease runs out, calls to the dead replica fail and are retried on the live one.
  let expired = false;
  void aExpired.then(() => (expired = true));
  const during: string[] = [];
  while (!expired) during.push(...(await servedBy(1)));
  assert.ok(during.length > 0);
  assert.ok(during.every((node) => node === b.nodeId));
  assert.deepEqual(new Set(await servedBy(6)), new Set([b.nodeId]));

  const c = await spawnDevSvc(t, args);
  const until = Date.now() + 10_000;
  let seen = new Set<string>();
  while (Date.now() < until && !seen.has(c.nodeId)) seen = new Set(await servedBy(4));
  assert.deepEqual(seen, new Set([b.nodeId, c.nodeId]), 'the restarted replica takes calls again');
});

test('R-DEV-7 etcd is the default registry; an unreachable etcd stops start-up with the address and the way out', async (context) => {
  const t = lifo(context);
  const dataDir = await tempDataDir(t);
  const address = `127.0.0.1:${await freePort()}`;
  await assert.rejects(
    startDevSvc({ ...quietHost, dataDir, registryAddress: [address] }),
    (err: Error) => err instanceof StartupError && err.message.includes(`etcd registry at ${address}`) && err.message.includes('--registry mdns'),
  );
  await assert.rejects(startDevData({ ...quiet, dataDir, registryAddress: [address] }), (err: Error) => err instanceof StartupError);
  const cli = await execFileAsync(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'devsvc', '--data-dir', dataDir, '--registry-address', address]).then(
    () => assert.fail('started without etcd'),
    (err: { code: number; stderr: string }) => err,
  );
  assert.equal(cli.code, 1);
  assert.match(cli.stderr, new RegExp(`offcloud: cannot reach the etcd registry at ${address.replace(/\./g, '\\.')} .*--registry mdns`));
});
