/**
 * The repository's compose.yaml as the README runs it under podman-compose 1.0:
 * `npm run compose -- up` (scripts/compose.ts: the services others wait for as
 * healthy first, until their health checks pass, then the rest) and
 * `npm run compose -- down`. The scale-out shape: two gateways sharing
 * rate-limit counters in Redis, two hub replicas on Redis, two DevSvc replicas
 * registered in etcd; the sentiment container on billing's demo key; the web
 * console over the others by service name. Published ports are free ones
 * (compose.yaml reads them from the environment, defaulting to offcloud up's).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import deviceSdk from 'azure-iot-device';
import mqttTransport from 'azure-iot-device-mqtt';
import { freePort, tempDataDir } from '../helpers/index.ts';
import { restClient, serviceToken } from '../hub/helpers.ts';
import { BUILD_TIMEOUT, ensureImage, ensureStandIns, podman, printedKeyInLogs, ROOT, waitReady } from './podman.ts';

const PROJECT = `offcloud-test-${process.pid}`;
const text = readFileSync(join(ROOT, 'compose.yaml'), 'utf8');
const ports: Record<string, number> = {};
const SERVICES = ['gateway-1', 'gateway-2', 'hub-1', 'hub-2', 'devdata', 'sentiment', 'console'];
let env: NodeJS.ProcessEnv;
let upOutput = '';

/** `npm run compose -- <args>`, as the README has it, for this test's project. */
async function npmCompose(args: string[]): Promise<string> {
  const { stdout, stderr } = await promisify(execFile)('npm', ['run', 'compose', '--', ...args], {
    cwd: ROOT,
    env,
    timeout: 900_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout + stderr;
}

const container = (service: string) => `${PROJECT}_${service}_1`;

before(async () => {
  const { image } = await ensureImage();
  await ensureStandIns();
  for (const [, variable] of text.matchAll(/\$\{([A-Z0-9_]+_PORT):-\d+\}/g)) ports[variable!] ??= await freePort();
  env = {
    ...process.env,
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
    OFFCLOUD_IMAGE: image,
    DEMO_KEY: 'compose-test-key',
    COMPOSE_PROJECT_NAME: PROJECT,
  };
  upOutput = await npmCompose(['up', ...SERVICES]);
}, BUILD_TIMEOUT);
after(async () => {
  // The last test took it down; this is for a run that failed before it.
  await npmCompose(['down']).catch((err: unknown) => console.log(`# compose down: ${(err as Error).message}`));
});

/** What of the project podman still has: containers, volumes, networks. */
async function projectLeftovers(): Promise<string[]> {
  const label = `label=io.podman.compose.project=${PROJECT}`;
  const lines = async (args: string[]) => (await podman(args)).stdout.split('\n').filter(Boolean);
  const containers = await lines(['ps', '--all', '--filter', label, '--format', '{{.Names}}']);
  const volumes = (await lines(['volume', 'ls', '--format', '{{.Name}}'])).filter((name) => name.startsWith(`${PROJECT}_`));
  const networks = (await lines(['network', 'ls', '--format', '{{.Name}}'])).filter((name) => name.startsWith(PROJECT));
  return [...containers.map((c) => `container ${c}`), ...volumes.map((v) => `volume ${v}`), ...networks.map((n) => `network ${n}`)];
}

test('npm run compose -- up waited for the health of what the services asked for wait on (redis, etcd, billing) before starting them', async () => {
  for (const service of ['redis', 'etcd', 'billing']) {
    assert.match(upOutput, new RegExp(`compose: ${service} is healthy`), upOutput.slice(-4000));
    // podman keeps each run of the check: the script's passing one is there (another run now
    // may take longer than the check's timeout on a busy machine).
    const log = (await podman(['inspect', '--format', '{{range .State.Health.Log}}{{.ExitCode}} {{end}}', container(service)])).stdout;
    assert.ok(log.split(' ').includes('0'), `${service}: exit codes of its checks: ${log}`);
  }
  // Nothing restarted while waiting for Redis, etcd or billing.
  const restarts = await podman([
    'inspect',
    '--format',
    '{{.Name}} {{.RestartCount}}',
    ...['hub-1', 'hub-2', 'devsvc-1', 'devsvc-2', 'gateway-1', 'sentiment'].map(container),
  ]);
  for (const line of restarts.stdout.trim().split('\n')) assert.match(line, / 0$/, restarts.stdout);
});

test('R-GW-1 R-GW-4 R-GW-6 /users through either gateway with the key; the two gateways share one rate-limit counter in Redis', async () => {
  const one = `http://127.0.0.1:${ports.GATEWAY_PORT}/users?apikey=compose-test-key`;
  const two = `http://127.0.0.1:${ports.GATEWAY_2_PORT}/users?apikey=compose-test-key`;
  await waitReady(one, container('gateway-1'));
  await waitReady(two, container('gateway-2'));
  // The readiness probes used this second's one request: the counter is shared.
  await sleep(1100);
  const users = await fetch(one);
  assert.equal(users.status, 200);
  assert.ok(Array.isArray(await users.json()));
  assert.equal((await fetch(`http://127.0.0.1:${ports.GATEWAY_PORT}/users?apikey=wrong`)).status, 401);
  // 1 request per second per consumer: a request through gateway 2 right after one through
  // gateway 1 is refused only when the counter is shared (tried again if a second boundary
  // fell between the two).
  let refused = false;
  for (let attempt = 0; attempt < 5 && !refused; attempt++) {
    await sleep(1100);
    const first = await fetch(one);
    const second = await fetch(two);
    await Promise.all([first.arrayBuffer(), second.arrayBuffer()]);
    refused = first.status === 200 && second.status === 429;
  }
  assert.ok(refused, 'gateway 2 never refused a request right after gateway 1 served one');
});

test('R-TWIN-5 a device on hub replica 1 receives a C2D message sent through replica 2', async (t) => {
  const { key: deviceKey } = await printedKeyInLogs(container('hub-1'), 'DeviceId=demo-device;SharedAccessKey=');
  const { key: ownerKey } = await printedKeyInLogs(container('hub-1'), 'SharedAccessKeyName=iothubowner;SharedAccessKey=');
  const dir = await tempDataDir(t);
  await podman(['cp', `${container('hub-1')}:/data/ca/ca.crt`, join(dir, 'ca.crt')]);
  const ca = await readFile(join(dir, 'ca.crt'), 'utf8');

  const device = deviceSdk.Client.fromConnectionString(
    `HostName=localhost:${ports.HUB_PORT};DeviceId=demo-device;SharedAccessKey=${deviceKey}`,
    mqttTransport.Mqtt,
  );
  await device.setOptions({ ca });
  await device.open();
  const rest = await restClient(`https://localhost:${ports.HUB_2_REST_PORT}`, ca, () => serviceToken('localhost', ownerKey));
  try {
    const received = new Promise<string>((resolve) => device.on('message', (message) => resolve(message.getData().toString())));
    const sent = await rest.call('POST', '/devices/demo-device/messages/devicebound', { body: 'through replica 2' });
    assert.equal(sent.status, 201, JSON.stringify(sent.body));
    assert.equal(await received, 'through replica 2');
  } finally {
    await device.close();
    await rest.agent.close();
  }
});

test('R-DEV-4 R-DEV-7 /data/<device> through DevSvc replicas registered in etcd', async () => {
  const url = `http://127.0.0.1:${ports.DEVDATA_PORT}/data/sensor-1`;
  await waitReady(url, container('devdata'));
  // Until a DevSvc replica has registered, the data service answers false (R-DEV-5).
  let answer = '';
  for (let attempt = 0; attempt < 60 && !/^Device active: {2}true/.test(answer); attempt++) {
    if (attempt) await sleep(1000);
    answer = await (await fetch(url)).text();
  }
  assert.match(answer, /^Device active: {2}true/);
  const registered = await podman(['exec', container('etcd'), 'etcdctl', 'get', '--prefix', '--keys-only', '']);
  assert.equal(registered.stdout.split('\n').filter((key) => key.includes('devsvc')).length, 2, registered.stdout);
});

test('offcloud env in a service container prints what its clients need: the command its start-up printed runs as shown', async () => {
  const logs = (await podman(['logs', container('hub-1')])).stdout;
  const closing = /^Every value above as shell variables: podman exec (\S+) offcloud env$/m.exec(logs);
  assert.ok(closing, logs.slice(-2000));
  const { stdout } = await podman(['exec', closing[1]!, 'offcloud', 'env']);
  assert.match(stdout, /^# offcloud hub, pid \d+/m);
  assert.match(stdout, /^export HUB_URL='mqtts:\/\/localhost:8883'$/m);
  assert.match(stdout, /^export CA='\/data\/ca\/ca\.crt'$/m);
  const device = /^export IOTHUB_DEVICE_CONNECTION_STRING='(HostName=localhost;DeviceId=demo-device;SharedAccessKey=[^']+)'$/m.exec(stdout)?.[1];
  assert.ok(device, stdout);
  // The key the hub printed, shared by both replicas through the data volume.
  const { key } = await printedKeyInLogs(container('hub-2'), 'DeviceId=demo-device;SharedAccessKey=');
  assert.ok(device.endsWith(`SharedAccessKey=${key}`));
  // The other services share the data volume, not the container: their records are not this one's.
  assert.doesNotMatch(stdout, /GATEWAY_URL|SENTIMENT_URL/);
  const sentiment = (await podman(['exec', container('sentiment'), 'offcloud', 'env'])).stdout;
  assert.match(sentiment, /^export SENTIMENT_URL='http:\/\/localhost:5000'$/m);
  assert.doesNotMatch(sentiment, /HUB_URL/);
});

test('the console service reaches the others by service name: its login token from the logs opens it, the overview finds them up', async () => {
  const url = `http://127.0.0.1:${ports.CONSOLE_PORT}`;
  await waitReady(`${url}/ready`, container('console'));
  // Published off loopback, it wants the token it printed at start.
  const { key: token } = await printedKeyInLogs(container('console'), 'login token');
  assert.equal((await fetch(`${url}/api/overview`)).status, 401);
  const headers = { 'content-type': 'application/json', 'x-offcloud-console': '1' };
  const wrong = await fetch(`${url}/api/login`, { method: 'POST', headers, body: JSON.stringify({ token: `${token}x` }) });
  assert.equal(wrong.status, 401);
  const login = await fetch(`${url}/api/login`, { method: 'POST', headers, body: JSON.stringify({ token }) });
  assert.equal(login.status, 204);
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  const overview = (await (await fetch(`${url}/api/overview`, { headers: { cookie } })).json()) as { components: { name: string; health: string }[] };
  const health = Object.fromEntries(overview.components.map((c) => [c.name, c.health]));
  for (const name of ['storage', 'identity', 'scripts', 'billing', 'devdata', 'sentiment'])
    assert.equal(health[name], 'up', `${name}: ${JSON.stringify(health)}`);
  // The face service is not started here: the probe tells it apart.
  assert.equal(health.face, 'down');
  // Storage through the console (the storage SDK, Shared Key, storage:10000 on the project network).
  const made = await fetch(`${url}/api/storage/containers/from-console`, { method: 'PUT', headers: { cookie, 'x-offcloud-console': '1' } });
  assert.ok(made.ok, `${made.status} ${await made.text()}`);
  const listed = await (await fetch(`${url}/api/storage/containers`, { headers: { cookie } })).text();
  assert.match(listed, /from-console/);
});

test('npm run compose -- down removes every container, the named volume and the network of the project, and no anonymous volume was made', async () => {
  const volumesBefore = (await podman(['volume', 'ls', '--format', '{{.Name}}'])).stdout.split('\n').filter(Boolean);
  const mounts = (await podman(['inspect', '--format', '{{range .Mounts}}{{.Type}}:{{.Name}} {{end}}', container('hub-1'), container('redis')])).stdout;
  // Only the named data volume: the image declares no VOLUME, redis's stand-in none either.
  assert.deepEqual([...new Set(mounts.split(/\s+/).filter(Boolean))], [`volume:${PROJECT}_offcloud-data`]);
  assert.ok(volumesBefore.includes(`${PROJECT}_offcloud-data`));
  assert.ok((await projectLeftovers()).includes(`network ${PROJECT}_default`), 'the project network is there before down');
  await npmCompose(['down']);
  assert.deepEqual(await projectLeftovers(), []);
});
