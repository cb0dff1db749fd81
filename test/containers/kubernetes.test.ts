/**
 * `podman kube play` of deploy/kubernetes/offcloud.yaml: every Deployment's
 * pods (one per replica) reach Running and pass the readiness probes the
 * manifest declares. Podman has no cluster around the pods, so this suite
 * stands in for the parts it lacks: each Service is a small forwarder
 * container carrying the Service's name on the pods' network (cluster DNS and
 * kube-proxy, round robin over the selected pods), each Secret becomes a
 * podman secret (how kube play resolves secretKeyRef), and the readiness
 * probes are run from inside each pod as the kubelet would.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseAllDocuments, stringify } from 'yaml';
import { freePort, tempDataDir } from '../helpers/index.ts';
import { BASE_IMAGE, BUILD_TIMEOUT, ensureImage, ensureStandIns, podman, podmanStatus, removeContainer, ROOT } from './podman.ts';

const MANIFEST = join(ROOT, 'deploy/kubernetes/offcloud.yaml');
const NETWORK = `offcloud-kube-${process.pid}`;

interface Probe {
  httpGet?: { path: string; port: number; scheme?: 'HTTP' | 'HTTPS' };
  tcpSocket?: { port: number };
}
interface Container {
  name: string;
  image: string;
  readinessProbe?: Probe;
  ports?: { containerPort: number }[];
}
interface Resource {
  kind: string;
  metadata: { name: string };
  spec?: {
    replicas?: number;
    selector?: Record<string, string> | { matchLabels: Record<string, string> };
    template?: { metadata: { labels: Record<string, string> }; spec: { containers: Container[] } };
    ports?: { port: number; targetPort?: number }[];
  };
  stringData?: Record<string, string>;
}

const resources: Resource[] = [];
const forwarders: string[] = [];
const secrets: string[] = [];
let playFile = '';
let gatewayPort = 0;

/** The pods kube play makes for a Deployment: `<name>-pod-<i>`, one per replica. */
function podsOf(deployment: Resource): string[] {
  return Array.from({ length: deployment.spec!.replicas ?? 1 }, (_, i) => `${deployment.metadata.name}-pod-${i}`);
}

function matches(labels: Record<string, string>, selector: Record<string, string>): boolean {
  return Object.entries(selector).every(([key, value]) => labels[key] === value);
}

/** A TCP forwarder: each listed port goes round robin to the targets (host:port). */
const FORWARDER = `
const net = require('node:net');
for (const [port, targets] of Object.entries(JSON.parse(process.argv[1]))) {
  let next = 0;
  net.createServer((client) => {
    const [host, targetPort] = targets[next++ % targets.length].split(':');
    const upstream = net.connect(Number(targetPort), host);
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  }).listen(Number(port));
}`;

/** A readiness probe as the kubelet runs it, from inside the pod: exit 0 when it passes. */
const PROBE = `
const [kind, port, path, scheme] = process.argv.slice(1);
const fail = () => process.exit(1);
if (kind === 'tcp') {
  require('node:net').connect(Number(port), '127.0.0.1').on('connect', () => process.exit(0)).on('error', fail);
} else {
  const client = scheme === 'HTTPS' ? require('node:https') : require('node:http');
  // The kubelet does not verify an HTTPS probe's certificate.
  client.get({ host: '127.0.0.1', port: Number(port), path, rejectUnauthorized: false, timeout: 5000 }, (res) => {
    process.exit(res.statusCode >= 200 && res.statusCode < 400 ? 0 : 1);
  }).on('error', fail);
}`;

function probeArgs(probe: Probe): string[] {
  if (probe.tcpSocket) return ['tcp', String(probe.tcpSocket.port)];
  const get = probe.httpGet!;
  return ['http', String(get.port), get.path, get.scheme ?? 'HTTP'];
}

before(async () => {
  const { image } = await ensureImage();
  await ensureStandIns();
  const text = await readFile(MANIFEST, 'utf8');
  for (const document of parseAllDocuments(text)) resources.push(document.toJS() as Resource);
  const deployments = resources.filter((r) => r.kind === 'Deployment');
  for (const deployment of deployments) {
    for (const container of deployment.spec!.template!.spec.containers) {
      if (container.image === 'localhost/offcloud:dev') container.image = image;
      // Podman 4 publishes every containerPort on the host, which two replicas cannot share;
      // in a cluster the list is informational (Services reach the pods' ports directly).
      delete container.ports;
    }
  }
  await podman(['network', 'create', NETWORK]);
  // The files podman reads (secrets, the manifest played), removed when the test process exits.
  const dir = await tempDataDir({ after });

  for (const secret of resources.filter((r) => r.kind === 'Secret')) {
    const data = Object.fromEntries(Object.entries(secret.stringData ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
    // Podman 4 reads a secretKeyRef from a podman secret holding {key: base64 value} as JSON.
    const file = join(dir, `secret-${secret.metadata.name}.json`);
    await writeFile(file, JSON.stringify(data));
    await podman(['secret', 'create', secret.metadata.name, file]);
    secrets.push(secret.metadata.name);
  }

  for (const service of resources.filter((r) => r.kind === 'Service')) {
    const selector = service.spec!.selector as Record<string, string>;
    const pods = deployments.filter((d) => matches(d.spec!.template!.metadata.labels, selector)).flatMap(podsOf);
    const routes = Object.fromEntries(service.spec!.ports!.map((p) => [p.port, pods.map((pod) => `${pod}:${p.targetPort ?? p.port}`)]));
    const name = `${NETWORK}-svc-${service.metadata.name}`;
    forwarders.push(name);
    const publish = service.metadata.name === 'gateway' ? ['-p', `127.0.0.1:${(gatewayPort = await freePort())}:8000`] : [];
    await podman([
      'run',
      '-d',
      '--name',
      name,
      '--network',
      NETWORK,
      '--network-alias',
      service.metadata.name,
      ...publish,
      BASE_IMAGE,
      'node',
      '-e',
      FORWARDER,
      JSON.stringify(routes),
    ]);
  }

  // kube play takes Deployments, ConfigMaps and claims; Services and Secrets are stood in for above.
  const playable = resources.filter((r) => !['Service', 'Secret'].includes(r.kind));
  playFile = join(dir, 'offcloud.yaml');
  await writeFile(playFile, playable.map((r) => stringify(r)).join('---\n'));
  await podman(['kube', 'play', '--network', NETWORK, playFile], { timeoutMs: 600_000 });
}, BUILD_TIMEOUT);

after(async () => {
  if (playFile) await podman(['kube', 'down', playFile]).catch(() => undefined);
  for (const name of forwarders) await removeContainer(name);
  for (const name of secrets) await podman(['secret', 'rm', name]).catch(() => undefined);
  for (const claim of resources.filter((r) => r.kind === 'PersistentVolumeClaim')) {
    await podman(['volume', 'rm', '--force', claim.metadata.name]).catch(() => undefined);
  }
  await podman(['network', 'rm', '--force', NETWORK]).catch(() => undefined);
});

test('every pod of the manifests reaches Running and passes its readiness probe (podman kube play)', async () => {
  const pending = new Map<string, string[]>();
  for (const deployment of resources.filter((r) => r.kind === 'Deployment')) {
    for (const pod of podsOf(deployment)) {
      for (const container of deployment.spec!.template!.spec.containers) {
        assert.ok(container.readinessProbe, `${deployment.metadata.name}/${container.name} has no readiness probe`);
        pending.set(`${pod}-${container.name}`, probeArgs(container.readinessProbe));
      }
    }
  }
  const deadline = Date.now() + 240_000;
  while (pending.size && Date.now() < deadline) {
    for (const [container, args] of pending) {
      if (podmanStatus(['exec', container, '/usr/local/bin/node', '-e', PROBE, ...args]).status === 0) pending.delete(container);
    }
    if (pending.size) await sleep(2000);
  }
  assert.deepEqual([...pending.keys()], [], 'containers whose readiness probe never passed');
  const pods = JSON.parse((await podman(['pod', 'ps', '--format', 'json'])).stdout) as { Name: string; Status: string }[];
  const ours = resources.filter((r) => r.kind === 'Deployment').flatMap(podsOf);
  for (const name of ours) assert.equal(pods.find((p) => p.Name === name)?.Status, 'Running', name);
});

test('R-GW-1 R-GW-4 /users through the gateway Service with the key from the Secret', async () => {
  const key = resources.find((r) => r.kind === 'Secret' && r.metadata.name === 'offcloud-gateway')!.stringData!.OFFCLOUD_GATEWAY_API_KEY!;
  const response = await fetch(`http://127.0.0.1:${gatewayPort}/users?apikey=${encodeURIComponent(key)}`);
  assert.equal(response.status, 200);
  assert.ok(Array.isArray(await response.json()));
});
