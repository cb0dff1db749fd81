/**
 * No cluster exists here, so a small HTTP server stands in for the Kubernetes
 * API server: pods in memory, GET list with a label selector, the watch stream
 * (one JSON event per line; a pod that stops matching the selector is DELETED,
 * as the API server reports it), and PATCH with a strategic merge (null
 * deletes a key) on labels and annotations. It records what our registry sent,
 * so the tests check the requests' documented shape.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { text } from 'node:stream/consumers';
import { quiet, tempDataDir, eventWithin } from '../helpers/index.ts';
import { startDevSvc } from '../../src/devices/devsvc-server.ts';
import { startDevData, NO_DATA_SENTENCE } from '../../src/devices/devdata-server.ts';
import { connectKubernetesRegistry, inClusterOptions } from '../../src/devices/discovery/kubernetes.ts';
import { serviceRecord } from '../../src/devices/discovery/types.ts';
import { StartupError } from '../../src/common/errors.ts';
import { baseOf, freePort, get, lifo, uniqueServiceName } from './helpers.ts';

const { port: _port, ...quietHost } = quiet;

interface FakePod {
  metadata: { name: string; labels: Record<string, string>; annotations: Record<string, string>; deletionTimestamp?: string };
  status: { phase: string };
}

function mergeStrings(target: Record<string, string>, patch: Record<string, string | null> | undefined): void {
  for (const [key, value] of Object.entries(patch ?? {})) {
    if (value === null) delete target[key];
    else target[key] = value;
  }
}

async function fakeApiServer(t: { after(fn: () => unknown): void }, namespace: string) {
  const pods = new Map<string, FakePod>();
  const requests: Array<{ method: string; url: string; contentType: string; authorization: string }> = [];
  const watchers = new Set<{ selector: string; res: ServerResponse }>();
  const matches = (pod: FakePod, selector: string) => {
    const [key, value] = selector.split('=');
    return !key || pod.metadata.labels[key] === value;
  };
  const server = createServer(async (req: IncomingMessage, res) => {
    const body = await text(req);
    requests.push({
      method: req.method!,
      url: req.url!,
      contentType: String(req.headers['content-type'] ?? ''),
      authorization: String(req.headers.authorization ?? ''),
    });
    const url = new URL(req.url!, 'http://api');
    const prefix = `/api/v1/namespaces/${namespace}/pods`;
    const send = (status: number, value: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    const selector = url.searchParams.get('labelSelector') ?? '';
    if (req.method === 'GET' && url.pathname === prefix && url.searchParams.get('watch') === 'true') {
      res.writeHead(200, { 'content-type': 'application/json' });
      const watcher = { selector, res };
      watchers.add(watcher);
      res.on('close', () => watchers.delete(watcher));
      return;
    }
    if (req.method === 'GET' && url.pathname === prefix) {
      const items = [...pods.values()].filter((pod) => matches(pod, selector));
      return send(200, { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items });
    }
    const pod = pods.get(decodeURIComponent(url.pathname.slice(prefix.length + 1)));
    if (req.method === 'PATCH' && url.pathname.startsWith(`${prefix}/`) && pod) {
      const patch = JSON.parse(body) as { metadata?: { labels?: Record<string, string | null>; annotations?: Record<string, string | null> } };
      const before = [...watchers].map((w) => matches(pod, w.selector));
      mergeStrings(pod.metadata.labels, patch.metadata?.labels);
      mergeStrings(pod.metadata.annotations, patch.metadata?.annotations);
      [...watchers].forEach((w, i) => {
        const now = matches(pod, w.selector);
        const type = before[i] && now ? 'MODIFIED' : now ? 'ADDED' : before[i] ? 'DELETED' : '';
        if (type) w.res.write(JSON.stringify({ type, object: pod }) + '\n');
      });
      return send(200, pod);
    }
    return send(404, { kind: 'Status', status: 'Failure', reason: 'NotFound', code: 404 });
  });
  server.listen(0, '127.0.0.1');
  await eventWithin(server, 'listening', 'the fake API server to listen');
  t.after(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  const addPod = (name: string, phase = 'Running') => pods.set(name, { metadata: { name, labels: {}, annotations: {} }, status: { phase } });
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, pods, requests, addPod, watchers };
}

test('R-DEV-7 kubernetes: register patches the own pod with go-micro labels and annotation; deregister patches them to null', async (context) => {
  const t = lifo(context);
  const api = await fakeApiServer(t, 'edge');
  api.addPod('devsvc-7f9c');
  const registry = await connectKubernetesRegistry({ apiUrl: api.url, namespace: 'edge', podName: 'devsvc-7f9c', token: 'sa-token' });
  t.after(() => registry.close());
  const record = serviceRecord('go.micro.srv/dev svc', 'dev-1', '10.0.0.7:4000', 'kubernetes');
  await registry.register(record, 90);
  const pod = api.pods.get('devsvc-7f9c')!;
  assert.deepEqual(pod.metadata.labels, { 'micro.mu/type': 'service', 'micro.mu/selector-go.micro.srv_dev_svc': 'service' });
  const annotation = JSON.parse(pod.metadata.annotations['micro.mu/service-go.micro.srv_dev_svc']!) as typeof record;
  assert.deepEqual(annotation, record);
  const patch = api.requests.find((r) => r.method === 'PATCH')!;
  assert.equal(patch.url, '/api/v1/namespaces/edge/pods/devsvc-7f9c');
  assert.equal(patch.contentType, 'application/strategic-merge-patch+json');
  assert.equal(patch.authorization, 'Bearer sa-token');
  await registry.deregister(record);
  assert.deepEqual(pod.metadata.labels, { 'micro.mu/type': 'service' });
  assert.deepEqual(pod.metadata.annotations, {});
});

test('R-DEV-7 kubernetes: watchers list pods by selector, keep Running ones not being deleted, and follow the watch stream', async (context) => {
  const t = lifo(context);
  const api = await fakeApiServer(t, 'default');
  const names = ['pod-a', 'pod-b', 'pod-pending', 'pod-deleting', 'pod-late'];
  for (const name of names) api.addPod(name, name === 'pod-pending' ? 'Pending' : 'Running');
  const service = uniqueServiceName();
  // Relisting only every minute: changes within the test can only arrive through the watch stream.
  const registries = await Promise.all(
    names.map((podName) => connectKubernetesRegistry({ apiUrl: api.url, namespace: 'default', podName, pollIntervalMs: 60_000 })),
  );
  t.after(() => Promise.all(registries.map((r) => r.close())));
  const records = names.map((name, i) => serviceRecord(service, `${service}-${name}`, `10.0.0.${i + 1}:4000`, 'kubernetes'));
  await Promise.all(registries.slice(0, 4).map((r, i) => r.register(records[i]!, 90)));
  api.pods.get('pod-deleting')!.metadata.deletionTimestamp = new Date().toISOString();
  let changes = 0;
  const watch = await registries[0]!.watch(service, () => changes++);
  t.after(() => watch.stop());
  await watch.ready;
  assert.deepEqual(
    watch
      .nodes()
      .map((n) => n.address)
      .sort(),
    ['10.0.0.1:4000', '10.0.0.2:4000'],
  );
  const listing = api.requests.find((r) => r.url.includes('labelSelector'))!;
  assert.equal(new URL(listing.url, 'http://x').searchParams.get('labelSelector'), `micro.mu/selector-${service}=service`);
  // A real API server replays what changed after resourceVersion; this stand-in does not, so wait for the stream.
  const until = Date.now() + 5000;
  while (Date.now() < until && api.watchers.size === 0) await new Promise((r) => setTimeout(r, 20));
  const watchRequest = api.requests.find((r) => r.url.includes('watch=true'))!;
  assert.match(watchRequest.url, /[?&]resourceVersion=1(&|$)/, "the watch starts at the listing's version");
  const nodesBecome = async (ids: string[]) => {
    const until = Date.now() + 5000;
    const current = () =>
      watch
        .nodes()
        .map((n) => n.id)
        .sort();
    while (Date.now() < until && current().join() !== ids.join()) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(current(), ids);
  };
  await registries[1]!.deregister(records[1]!);
  await nodesBecome([`${service}-pod-a`]);
  await registries[4]!.register(records[4]!, 90);
  await nodesBecome([`${service}-pod-a`, `${service}-pod-late`]);
  assert.ok(changes >= 3);
});

test('R-DEV-7 kubernetes: DevSvc and the data service find each other through the API; no API → clear start-up error', async (context) => {
  const t = lifo(context);
  const dataDir = await tempDataDir(t);
  const api = await fakeApiServer(t, 'default');
  const ownPod = inClusterOptions('').podName;
  api.addPod(ownPod);
  const serviceName = uniqueServiceName();
  const devsvc = await startDevSvc({ ...quietHost, dataDir, serviceName, registry: 'kubernetes', registryAddress: [api.url] });
  t.after(() => devsvc.close());
  assert.ok(api.pods.get(ownPod)!.metadata.annotations[`micro.mu/service-${serviceName}`]);
  const devdata = await startDevData({ ...quiet, deadlineMs: 10_000, dataDir, serviceName, registry: 'kubernetes', registryAddress: [api.url] });
  t.after(() => devdata.close());
  const answer = await get(`${baseOf(devdata.urls)}/data/camera-1`);
  assert.equal(answer.body, `Device active:  true\n${NO_DATA_SENTENCE}\n`);
  await assert.rejects(
    startDevSvc({ ...quietHost, dataDir, registry: 'kubernetes', registryAddress: [`http://127.0.0.1:${await freePort()}`] }),
    (err: Error) => err instanceof StartupError && /cannot reach the kubernetes registry/.test(err.message),
  );
  // An API that answers but has no pod of ours: registration fails, start-up says so and lets go of the port.
  api.pods.delete(ownPod);
  await assert.rejects(
    startDevSvc({ ...quietHost, dataDir, serviceName, registry: 'kubernetes', registryAddress: [api.url] }),
    (err: Error) => err instanceof StartupError && /could not register in the kubernetes API .* answered 404/.test(err.message),
  );
});
