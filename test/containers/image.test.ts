/**
 * The offcloud image, run the way the spec's containers are run: the spec's
 * `podman run` lines (container ports 5000/5001, `--memory`/`--cpus`, the
 * `Eula`/`Billing`/`ApiKey` start-up parameters), official clients on the host
 * talking through published ports, and `podman stop` ending each container
 * cleanly. Host ports are free ones, so the suite runs beside anything else.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, realpath } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TextAnalyticsClient, type TextAnalyticsModels } from '@azure/cognitiveservices-textanalytics';
import { ApiKeyCredentials } from '@azure/ms-rest-js';
import deviceSdk from 'azure-iot-device';
import mqttTransport from 'azure-iot-device-mqtt';
import { Agent, request } from 'undici';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../helpers/index.ts';
import { eventually } from '../hub/helpers.ts';
import { portrait } from '../face/images.ts';
import { argmax, honeycombSvg, pictureBody } from '../scoring/fixtures.ts';
import { BUILD_TIMEOUT, ensureImage, podman, podmanStatus, printedKeyInLogs, removeContainer, ROOT, waitReady } from './podman.ts';

const HONEYCOMB = 599;
const NETWORK = `offcloud-test-${process.pid}`;
const containers: string[] = [];
let image: string;

before(async () => {
  const built = await ensureImage();
  image = built.image;
  console.log(`# image ${image}: ${(built.sizeBytes / 1e6).toFixed(0)} MB${built.built ? ' (built now)' : ''}`);
  await podman(['network', 'create', NETWORK]);
}, BUILD_TIMEOUT);
after(async () => {
  for (const name of containers) await removeContainer(name);
  await podman(['network', 'rm', '--force', NETWORK]).catch(() => undefined);
});

interface Started {
  name: string;
  /** Host port of each published container port. */
  ports: Record<number, number>;
  /** Milliseconds from `podman run` to the first 2xx of /ready (when a ready URL was given). */
  readyMs?: number;
}

/**
 * `podman run -d` on the suite's network, each container port published on a
 * free host port; waits for `readyPath` on the first published port.
 */
async function run(
  role: string,
  options: { publish?: number[]; flags?: string[]; args: string[]; readyPath?: string; readyScheme?: 'http' | 'https' },
): Promise<Started> {
  const name = `${NETWORK}-${role}`;
  containers.push(name);
  const ports: Record<number, number> = {};
  for (const port of options.publish ?? []) ports[port] = await freePort();
  const publish = Object.entries(ports).flatMap(([inside, outside]) => ['-p', `127.0.0.1:${outside}:${inside}`]);
  const start = performance.now();
  await podman(['run', '-d', '--name', name, '--network', NETWORK, ...publish, ...(options.flags ?? []), image, ...options.args]);
  if (!options.readyPath) return { name, ports };
  await waitReady(`http://127.0.0.1:${ports[options.publish![0]!]}${options.readyPath}`, name);
  const readyMs = performance.now() - start;
  console.log(`# ${role}: /ready ${(readyMs / 1000).toFixed(1)} s after podman run`);
  return { name, ports, readyMs };
}

/** podman stop (10 s grace, then SIGKILL = 137): a clean drain exits 0 well before that. */
async function stopCleanly(name: string): Promise<void> {
  await podman(['stop', '--time', '10', name]);
  const code = (await podman(['inspect', '--format', '{{.State.ExitCode}}', name])).stdout.trim();
  const logs = podmanStatus(['logs', '--tail', '20', name]);
  assert.equal(code, '0', `${name} exit code; logs:\n${logs.stdout}${logs.stderr}`);
}

async function billingKey(billing: string, kind: 'sentiment' | 'face'): Promise<string> {
  const { stdout } = await podman(['exec', billing, 'offcloud', 'billing', 'resource', 'create', '--kind', kind]);
  return /ApiKey: (\S+)/.exec(stdout)![1]!;
}

/** Usage recorded by a billing container, by meter. */
async function usage(billing: string): Promise<Record<string, number>> {
  const { stdout } = await podman(['exec', billing, 'offcloud', 'billing', 'usage', '--period', 'all', '--format', 'json']);
  const rows = JSON.parse(stdout) as { meter: string; quantity: number }[];
  return Object.fromEntries(rows.map((row) => [row.meter, row.quantity]));
}

function sentimentClient(port: number): TextAnalyticsClient {
  return new TextAnalyticsClient(new ApiKeyCredentials({ inHeader: { 'Ocp-Apim-Subscription-Key': 'any-key' } }), `http://127.0.0.1:${port}`);
}

async function scoreTwoDocuments(port: number): Promise<void> {
  // The client spreads the parsed body onto its response; its typings only say `body: any`.
  const result = (await sentimentClient(port).sentiment({
    multiLanguageBatchInput: {
      documents: [
        { language: 'en', id: 'good', text: 'A wonderful, moving film with brilliant performances.' },
        { language: 'en', id: 'bad', text: 'A dull, lifeless mess. The worst movie of the year.' },
      ],
    },
  })) as unknown as TextAnalyticsModels.SentimentBatchResult;
  assert.deepEqual(result.errors, []);
  const [good, bad] = result.documents!;
  assert.ok(good!.score! > 0.5 && bad!.score! < 0.5, `scores ${good!.score} ${bad!.score}`);
}

/** A probe for `eventually` that asks podman at most twice a second. */
function throttled<T>(probe: () => Promise<T | undefined>): () => Promise<T | undefined> {
  return async () => {
    await sleep(500);
    return probe();
  };
}

test('the image builds from the repository, both build files are one, and it runs as a non-root user', async () => {
  assert.equal(await realpath(join(ROOT, 'Dockerfile')), await realpath(join(ROOT, 'Containerfile')));
  const { stdout } = await podman(['run', '--rm', '--entrypoint', 'id', image, '-u']);
  assert.notEqual(stdout.trim(), '0');
  const config = JSON.parse((await podman(['image', 'inspect', '--format', '{{json .Config}}', image])).stdout) as {
    User: string;
    Entrypoint: string[];
    Cmd: string[];
  };
  assert.equal(config.User, 'offcloud');
  assert.deepEqual(config.Entrypoint, ['/usr/bin/tini', '--', 'offcloud']);
  assert.deepEqual(config.Cmd, ['up']);
});

test('the default command is offcloud up: every component inside, listening on all interfaces, the CA in /data for the host', async () => {
  const up = await run('up', { publish: [8082, 9440], args: [], readyPath: '/ready' });
  assert.equal(await (await fetch(`http://127.0.0.1:${up.ports[8082]}/add/2/3`)).text(), '5');
  const dir = await mkdtemp(join(tmpdir(), 'offcloud-ca-'));
  await podman(['cp', `${up.name}:/data/ca/ca.crt`, join(dir, 'ca.crt')]);
  // The identity issuer's HTTPS certificate verifies against that CA from the host
  // (once up has reached it: components start one after another).
  const agent = new Agent({ connect: { ca: await readFile(join(dir, 'ca.crt'), 'utf8') } });
  try {
    const status = await eventually(
      throttled(() =>
        request(`https://localhost:${up.ports[9440]}/health`, { dispatcher: agent }).then(
          async (response) => (await response.body.dump(), response.statusCode),
          (err: NodeJS.ErrnoException) => (err.code === 'ECONNREFUSED' || err.code === 'ECONNRESET' ? undefined : Promise.reject(err)),
        ),
      ),
      180_000,
      'the identity issuer inside offcloud up',
    );
    assert.equal(status, 200);
  } finally {
    await agent.close();
  }
  await stopCleanly(up.name);
});

test('R-SENT-8 without Eula=accept the sentiment container exits non-zero with the message', () => {
  const result = podmanStatus(['run', '--rm', image, 'sentiment', 'Billing=http://127.0.0.1:5100', 'ApiKey=0123']);
  assert.notEqual(result.status, 0);
  assert.match(result.stderr, /sentiment: missing start-up parameter Eula; give Eula=accept/);
});

test('R-SENT-1 R-SENT-8 R-SENT-9 R-FACE-1 R-FACE-6 the spec commands: sentiment (arguments and -e) and face, usage reaching a billing container', async () => {
  const billing = await run('billing', { publish: [5100], args: ['billing'], readyPath: '/ready' });
  const sentimentKey = await billingKey(billing.name, 'sentiment');
  const faceKey = await billingKey(billing.name, 'face');
  const billingUrl = `http://${billing.name}:5100`;
  // Usage every second instead of every ten minutes, so the report is seen while the test runs.
  const fastMetering = ['-e', 'OFFCLOUD_SENTIMENT_METERING_INTERVAL_MS=1000'];

  const byArguments = await run('sentiment-args', {
    publish: [5000],
    flags: ['--memory', '4g', '--cpus', '1', ...fastMetering],
    args: ['sentiment', 'Eula=accept', `Billing=${billingUrl}`, `ApiKey=${sentimentKey}`],
    readyPath: '/ready',
  });
  await scoreTwoDocuments(byArguments.ports[5000]!);
  const meters = await eventually(
    throttled(async () => {
      const recorded = await usage(billing.name);
      return Object.values(recorded).some((quantity) => quantity >= 2) ? recorded : undefined;
    }),
    30_000,
    'sentiment usage in the billing container',
  );
  assert.ok(
    Object.keys(meters).some((meter) => /TextAnalytics/.test(meter)),
    JSON.stringify(meters),
  );

  const byEnvironment = await run('sentiment-env', {
    publish: [5000],
    flags: ['--memory', '4g', '--cpus', '1', '-e', 'Eula=accept', '-e', `Billing=${billingUrl}`, '-e', `ApiKey=${sentimentKey}`],
    args: ['sentiment'],
    readyPath: '/ready',
  });
  await scoreTwoDocuments(byEnvironment.ports[5000]!);

  const face = await run('face', {
    publish: [5000],
    flags: ['--memory', '6g', '--cpus', '2'],
    args: ['face', 'Eula=accept', `Billing=${billingUrl}`, `ApiKey=${faceKey}`],
    readyPath: '/ready',
  });
  const detected = await fetch(`http://127.0.0.1:${face.ports[5000]}/face/v1.0/detect`, {
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream', 'Ocp-Apim-Subscription-Key': faceKey },
    body: new Uint8Array(await portrait()),
  });
  assert.equal(detected.status, 200);
  const faces = (await detected.json()) as { faceRectangle: { width: number } }[];
  assert.equal(faces.length, 1);
  assert.ok(faces[0]!.faceRectangle.width > 50);

  for (const name of [byArguments.name, byEnvironment.name, face.name, billing.name]) await stopCleanly(name);
});

test('R-SCORE-1 R-SCORE-11 scoring on 5001, and the front-end in a second container forwarding to it over TCP 5001', async () => {
  const scoring = await run('scoring', { publish: [5001], args: ['scoring'], readyPath: '/ready' });
  const body = await pictureBody(honeycombSvg());
  const direct = await fetch(`http://127.0.0.1:${scoring.ports[5001]}/score`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  assert.equal(direct.status, 200);
  assert.equal(argmax(((await direct.json()) as { result: number[] }).result), HONEYCOMB);

  const frontend = await run('frontend', { publish: [5080], args: ['scoring-frontend', '--services', `imagenet=${scoring.name}:5001`], readyPath: '/ready' });
  const { key } = await printedKeyInLogs(frontend.name, 'imagenet primary key');
  const forwarded = await fetch(`http://127.0.0.1:${frontend.ports[5080]}/api/v1/service/imagenet/score`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body,
  });
  assert.equal(forwarded.status, 200);
  assert.equal(argmax(((await forwarded.json()) as { result: number[] }).result), HONEYCOMB);

  for (const name of [frontend.name, scoring.name]) await stopCleanly(name);
});

test('R-TWIN-1 R-TWIN-6 R-TWIN-9 the device SDK on the host patches reported properties of the hub in a container, trusting its CA', async () => {
  const hub = await run('hub', { publish: [8883], args: ['hub'] });
  const { key } = await printedKeyInLogs(hub.name, 'DeviceId=demo-device;SharedAccessKey=');
  // The CA as a user takes it: `podman cp` out of the /data volume.
  const dir = await mkdtemp(join(tmpdir(), 'offcloud-ca-'));
  await podman(['cp', `${hub.name}:/data/ca/ca.crt`, join(dir, 'ca.crt')]);
  const ca = await readFile(join(dir, 'ca.crt'), 'utf8');

  const { Client } = deviceSdk;
  const device = Client.fromConnectionString(`HostName=localhost:${hub.ports[8883]};DeviceId=demo-device;SharedAccessKey=${key}`, mqttTransport.Mqtt);
  await device.setOptions({ ca });
  await device.open();
  try {
    const twin = await device.getTwin();
    await new Promise<void>((resolve, reject) => twin.properties.reported.update({ firmware: '1.2.3' }, (err?: Error) => (err ? reject(err) : resolve())));
    const fresh = await device.getTwin();
    assert.equal((fresh.properties.reported as unknown as { firmware: string }).firmware, '1.2.3');
  } finally {
    await device.close();
  }
  await stopCleanly(hub.name);
});

test('podman stop ends the script server with exit code 0 and no script it started is left', async () => {
  const scripts = await run('scripts', { publish: [8080], args: ['scripts'], readyPath: '/ready' });
  // A script that would outlive the test by far; its argument marks it in the host's process list.
  const marker = String(4000 + (process.pid % 1000));
  await podman([
    'exec',
    scripts.name,
    'sh',
    '-c',
    `mkdir -p /data/scripts/long && printf '#!/bin/sh\\necho started\\nexec sleep ${marker}\\n' > /data/scripts/long/wait.sh && chmod +x /data/scripts/long/wait.sh`,
  ]);
  const curl = spawn('curl', ['-sN', '-X', 'POST', `http://127.0.0.1:${scripts.ports[8080]}/long/wait`]);
  await new Promise<void>((resolve, reject) => {
    curl.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('data: started') && resolve());
    curl.once('exit', (code) => reject(new Error(`curl ended (${code}) before the script started`)));
  });
  const running = () => podmanStatus(['top', scripts.name, 'args']).stdout;
  assert.match(running(), new RegExp(`sleep ${marker}`));
  await stopCleanly(scripts.name);
  curl.kill();
  assert.deepEqual(await hostProcesses(`sleep ${marker}`), []);
});

/** PIDs of host processes whose command line is exactly `command`. */
async function hostProcesses(command: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.split('\0').filter(Boolean).join(' ') === command) found.push(Number(entry));
  }
  return found;
}
