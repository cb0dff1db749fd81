/**
 * N devices publishing QoS 1 telemetry over TLS through our hub (SAS auth,
 * property bags, telemetry log) vs. the same load through Debian's mosquitto
 * (TLS, anonymous) on another port: same mqtt.js client code, same run,
 * alternating rounds. While the hub carries the load, some devices also time
 * reported-PATCH round trips; mosquitto's QoS 1 PUBACK time under the same
 * load is the floor they are set against.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import mqtt, { type MqttClient } from 'mqtt';
import { createSasToken } from '../../src/hub/domain/sas.ts';
import { freePort, spawnHub } from '../../test/hub/helpers.ts';
import { cpuSplit } from '../common/cpu.ts';
import { median } from '../common/load.ts';
import { sized } from '../common/quick.ts';
import { result, type BenchResult } from '../common/result.ts';

const DEVICES = Number(process.env.HUB_BENCH_DEVICES ?? sized(200, 20));
const SECONDS = Number(process.env.HUB_BENCH_SECONDS ?? sized(5, 1));
const ROUNDS = Number(process.env.HUB_BENCH_ROUNDS ?? sized(2, 1));
/** An unmeasured round per server first, as the gateway bench warms up: Node's JIT compiles the hub's hot path in its first thousands of messages. */
const WARM_UP_SECONDS = Number(process.env.HUB_BENCH_WARM_UP_SECONDS ?? sized(2, 0));
/** Devices that also time twin PATCH round trips during the hub rounds. */
const TWIN_DEVICES = Number(process.env.HUB_BENCH_TWIN_DEVICES ?? 10);
const PAYLOAD = Buffer.from(JSON.stringify({ temperature: 21.5, humidity: 40, status: 'ok' }));

interface Target {
  name: string;
  /** The server's process, for its CPU time per message. */
  pid: number;
  port: number;
  ca: string;
  credentials(i: number): { clientId: string; username?: string; password?: string };
}

/** Waits until something listens on the port (mosquitto's log is block-buffered on a pipe). */
async function listening(child: ChildProcess, port: number): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${child.spawnfile} exited with ${child.exitCode}`);
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.end();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (up) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on port ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function connectAll(target: Target): Promise<MqttClient[]> {
  const clients: MqttClient[] = [];
  // In batches, so 200 TLS handshakes do not all land in one tick.
  for (let i = 0; i < DEVICES; i += 20) {
    const batch = Array.from({ length: Math.min(20, DEVICES - i) }, (_, j) =>
      mqtt.connectAsync(`mqtts://localhost:${target.port}`, {
        protocolVersion: 4,
        ca: target.ca,
        reconnectPeriod: 0,
        clean: true,
        ...target.credentials(i + j),
      }),
    );
    clients.push(...(await Promise.all(batch)));
  }
  return clients;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

interface Round {
  messagesPerSecond: number;
  /** Server CPU (user + system) per acknowledged telemetry message, in microseconds. */
  cpuMicrosPerMessage: number;
  /** The server's system (kernel) share of it. */
  systemMicrosPerMessage: number;
  /** The load generator's (this process's) CPU per message: it shares the two cores with the server. */
  clientMicrosPerMessage: number;
  pubackMs: number[];
  twinMs: number[];
}

/** Every device publishes QoS 1 back to back for SECONDS; optionally some time twin PATCHes too. */
async function loadRound(target: Target, withTwin: boolean, seconds = SECONDS): Promise<Round> {
  const clients = await connectAll(target);
  const twinClients = withTwin ? clients.slice(0, TWIN_DEVICES) : [];
  await Promise.all(twinClients.map((c) => c.subscribeAsync('$iothub/twin/res/#', { qos: 0 })));
  let acked = 0;
  const pubackMs: number[] = [];
  const twinMs: number[] = [];
  const deadline = Date.now() + seconds * 1000;
  const telemetry = clients.map(async (client, i) => {
    const topic = `devices/bench-${i}/messages/events/%24.ct=application%2Fjson`;
    while (Date.now() < deadline) {
      const started = performance.now();
      await client.publishAsync(topic, PAYLOAD, { qos: 1 });
      pubackMs.push(performance.now() - started);
      acked++;
    }
  });
  const twins = twinClients.map(async (client, i) => {
    let rid = 0;
    while (Date.now() < deadline) {
      const id = `${i}-${rid++}`;
      const started = performance.now();
      const answered = new Promise<void>((resolve) => {
        const onMessage = (topic: string) => {
          if (!topic.includes(`$rid=${id}&`)) return;
          client.off('message', onMessage);
          resolve();
        };
        client.on('message', onMessage);
      });
      await client.publishAsync(`$iothub/twin/PATCH/properties/reported/?$rid=${id}`, JSON.stringify({ counter: rid }), { qos: 0 });
      await answered;
      twinMs.push(performance.now() - started);
    }
  });
  const begun = Date.now();
  const serverBefore = cpuSplit(target.pid);
  const clientBefore = cpuSplit('self');
  await Promise.all([...telemetry, ...twins]);
  const server = cpuSplit(target.pid);
  const client = cpuSplit('self');
  const elapsed = (Date.now() - begun) / 1000;
  await Promise.all(clients.map((c) => c.endAsync()));
  const perMessage = (ms: number) => (ms * 1000) / acked;
  return {
    messagesPerSecond: acked / elapsed,
    cpuMicrosPerMessage: perMessage(server.user + server.system - serverBefore.user - serverBefore.system),
    systemMicrosPerMessage: perMessage(server.system - serverBefore.system),
    clientMicrosPerMessage: perMessage(client.user + client.system - clientBefore.user - clientBefore.system),
    pubackMs,
    twinMs,
  };
}

async function startOurHub(dataDir: string): Promise<{ child: ChildProcess; target: Target }> {
  const { child, hub } = await spawnHub({ dataDir, demoDevice: '', logLevel: 'warn' });
  const keys: string[] = [];
  for (let i = 0; i < DEVICES; i++) keys.push(await hub.createDevice(`bench-${i}`));
  await hub.close();
  const expiry = Math.floor(Date.now() / 1000) + 3600;
  return {
    child,
    target: {
      name: 'offcloud hub',
      pid: child.pid!,
      port: hub.mqttPort,
      ca: hub.ca,
      credentials: (i) => ({
        clientId: `bench-${i}`,
        username: `localhost/bench-${i}/?api-version=2021-04-12`,
        password: createSasToken(`localhost/devices/bench-${i}`, keys[i]!, expiry),
      }),
    },
  };
}

async function startMosquitto(dataDir: string): Promise<{ child: ChildProcess; target: Target }> {
  const port = await freePort();
  const config = join(dataDir, 'mosquitto.conf');
  await writeFile(
    config,
    [
      `listener ${port} 127.0.0.1`,
      `cafile ${join(dataDir, 'ca', 'ca.crt')}`,
      `certfile ${join(dataDir, 'ca', 'localhost.pem')}`,
      `keyfile ${join(dataDir, 'ca', 'localhost.pem')}`,
      'allow_anonymous true',
      // Stay the user we run as: dropping to "mosquitto" would lose access to the temp dir's key.
      `user ${userInfo().username}`,
      'persistence false',
      'log_dest stderr',
      'log_type error',
      '',
    ].join('\n'),
  );
  const child = spawn('/usr/sbin/mosquitto', ['-c', config], { stdio: ['ignore', 'ignore', 'inherit'] });
  await listening(child, port);
  return {
    child,
    target: {
      name: 'mosquitto',
      pid: child.pid!,
      port,
      ca: await readFile(join(dataDir, 'ca', 'ca.crt'), 'utf8'),
      credentials: (i) => ({ clientId: `bench-${i}` }),
    },
  };
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

export async function run(): Promise<BenchResult[]> {
  const dataDir = await mkdtemp(join(tmpdir(), 'offcloud-hub-bench-'));
  const ours = await startOurHub(dataDir);
  let baseline: Awaited<ReturnType<typeof startMosquitto>> | undefined;
  try {
    baseline = await startMosquitto(dataDir);
    if (WARM_UP_SECONDS > 0) {
      await loadRound(ours.target, true, WARM_UP_SECONDS);
      await loadRound(baseline.target, false, WARM_UP_SECONDS);
    }
    const hubRounds: Round[] = [];
    const mosquittoRounds: Round[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      hubRounds.push(await loadRound(ours.target, true));
      mosquittoRounds.push(await loadRound(baseline.target, false));
    }
    const hubRate = median(hubRounds.map((r) => r.messagesPerSecond));
    const mosquittoRate = median(mosquittoRounds.map((r) => r.messagesPerSecond));
    const twinMs = hubRounds.flatMap((r) => r.twinMs);
    const pubackMs = mosquittoRounds.flatMap((r) => r.pubackMs);
    const details = {
      devices: DEVICES,
      secondsPerRound: SECONDS,
      rounds: ROUNDS,
      warmUpSeconds: WARM_UP_SECONDS,
      twinDevices: TWIN_DEVICES,
      hubRates: hubRounds.map((r) => Math.round(r.messagesPerSecond)),
      mosquittoRates: mosquittoRounds.map((r) => Math.round(r.messagesPerSecond)),
      hubCpuMicrosPerMessage: hubRounds.map((r) => Math.round(r.cpuMicrosPerMessage)),
      mosquittoCpuMicrosPerMessage: mosquittoRounds.map((r) => Math.round(r.cpuMicrosPerMessage)),
      hubSystemMicrosPerMessage: hubRounds.map((r) => Math.round(r.systemMicrosPerMessage)),
      mosquittoSystemMicrosPerMessage: mosquittoRounds.map((r) => Math.round(r.systemMicrosPerMessage)),
      clientMicrosPerMessageWithHub: hubRounds.map((r) => Math.round(r.clientMicrosPerMessage)),
      clientMicrosPerMessageWithMosquitto: mosquittoRounds.map((r) => Math.round(r.clientMicrosPerMessage)),
      twinSamples: twinMs.length,
    };
    return [
      result({
        name: `hub QoS 1 telemetry, ${DEVICES} devices over TLS`,
        unit: 'msg/s',
        ours: hubRate,
        baseline: 'mosquitto 2.0 (TLS, anonymous)',
        baselineValue: mosquittoRate,
        better: 'higher',
        details,
      }),
      result({
        name: 'hub twin reported PATCH round trip p50 under that load',
        unit: 'ms',
        ours: percentile(twinMs, 50),
        baseline: 'mosquitto QoS 1 PUBACK p50 under the same load',
        baselineValue: percentile(pubackMs, 50),
        better: 'lower',
        details,
      }),
      result({
        name: 'hub twin reported PATCH round trip p99 under that load',
        unit: 'ms',
        ours: percentile(twinMs, 99),
        baseline: 'mosquitto QoS 1 PUBACK p99 under the same load',
        baselineValue: percentile(pubackMs, 99),
        better: 'lower',
        details,
      }),
    ];
  } finally {
    await Promise.all([stop(ours.child), baseline && stop(baseline.child)]);
    await rm(dataDir, { recursive: true, force: true });
  }
}
