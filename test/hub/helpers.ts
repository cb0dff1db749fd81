/** Starting a hub on port 0 and talking to its REST API, for the hub suites. */
import { readFile } from 'node:fs/promises';
import https from 'node:https';
import tls from 'node:tls';
import type { Duplex } from 'node:stream';
import type { TestContext } from 'node:test';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import mqtt, { type MqttClient } from 'mqtt';
import { freePort, tempDataDir, quiet } from '../helpers/index.ts';
import { startHub, type HubOptions } from '../../src/hub/server.ts';
import { createSasToken } from '../../src/hub/domain/sas.ts';
import type { HubFacts } from '../../src/common/facts.ts';

export interface TestHub {
  host: string;
  mqttPort: number;
  /** MQTT and AMQP over WebSockets (`wss://…/$iothub/websocket`). */
  webSocketPort: number;
  /** AMQP over TLS. */
  amqpPort: number;
  restUrl: string;
  dataDir: string;
  ca: string;
  caPath: string;
  ownerKey: string;
  /** What the hub published for clients (host name, demo device connection string, service string). */
  facts: HubFacts;
  rest(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: unknown; headers: Record<string, string | string[] | undefined> }>;
  /** Creates a device (or `d1/m1` module) and returns its primary key. */
  createDevice(key: string): Promise<string>;
  /** `HostName=localhost:<port>;DeviceId=…;SharedAccessKey=…` for the SDK. */
  connectionString(key: string, sharedAccessKey: string): string;
  close(): Promise<void>;
}

export function serviceToken(host: string, key: string, ttlSeconds = 3600): string {
  return createSasToken(host, key, Math.floor(Date.now() / 1000) + ttlSeconds, 'iothubowner');
}

export async function restClient(restUrl: string, ca: string, token: () => string) {
  const agent = new Agent({ connect: { ca } });
  return {
    agent,
    async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
      const raw = typeof body === 'string' || Buffer.isBuffer(body);
      const response = await request(`${restUrl}${path}`, {
        method: method as 'GET',
        dispatcher: agent,
        headers: { authorization: token(), ...(body === undefined ? {} : { 'content-type': 'application/json; charset=utf-8' }), ...headers },
        body: body === undefined ? undefined : raw ? (body as string) : JSON.stringify(body),
      });
      const text = await response.body.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        // not JSON: the text itself
      }
      return { status: response.statusCode, body: parsed, headers: response.headers };
    },
  };
}

export async function startTestHub(
  t: TestContext | { after(fn: () => unknown): void },
  given: Partial<HubOptions> & { clock?: () => number } = {},
): Promise<TestHub> {
  const dataDir = given.dataDir ?? (await tempDataDir(t));
  const running = await startHub({ ...quiet, restPort: 0, webSocketPort: 0, amqpPort: 0, demoDevice: '', dataDir, ...given });
  const mqttPort = Number(new URL(running.urls[0]!.url).port);
  const restUrl = running.urls[1]!.url;
  const webSocketPort = Number(new URL(running.urls[2]!.url).port);
  const amqpPort = Number(new URL(running.urls[3]!.url).port);
  const caPath = running.caCertPath!;
  const ca = await readFile(caPath, 'utf8');
  const ownerKey = /;SharedAccessKey=([^;]+)/.exec(running.facts!.hub!.serviceConnectionString)![1]!;
  const host = given.hostName ?? 'localhost';
  const client = await restClient(restUrl, ca, () => serviceToken(host, ownerKey));
  let closing: Promise<void> | undefined;
  const hub: TestHub = {
    host,
    mqttPort,
    webSocketPort,
    amqpPort,
    restUrl,
    dataDir,
    ca,
    caPath,
    ownerKey,
    facts: running.facts!.hub!,
    rest: client.call,
    async createDevice(key) {
      const [deviceId, moduleId] = key.split('/');
      const path = moduleId ? `/devices/${encodeURIComponent(deviceId!)}/modules/${encodeURIComponent(moduleId)}` : `/devices/${encodeURIComponent(deviceId!)}`;
      const created = await client.call('PUT', path, { deviceId, ...(moduleId ? { moduleId } : {}) });
      if (created.status !== 200) throw new Error(`create ${key}: ${created.status} ${JSON.stringify(created.body)}`);
      return (created.body as { authentication: { symmetricKey: { primaryKey: string } } }).authentication.symmetricKey.primaryKey;
    },
    connectionString(key, sharedAccessKey) {
      const [deviceId, moduleId] = key.split('/');
      return `HostName=${host}:${mqttPort};DeviceId=${deviceId}${moduleId ? `;ModuleId=${moduleId}` : ''};SharedAccessKey=${sharedAccessKey}`;
    },
    // Once: a test that closes the hub itself (to test shutdown) leaves t.after nothing to do.
    close() {
      closing ??= client.agent.close().then(() => running.close());
      return closing;
    },
  };
  t.after(() => hub.close());
  return hub;
}

/** Resolves with the first value `emitter` gives for `event`, or fails after `ms`. */
export function nextEvent<T>(subscribe: (listener: (value: T) => void) => void, ms = 10_000, what = 'event'): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
    subscribe((value) => {
      clearTimeout(timer);
      resolve(value);
    });
  });
}

/** Polls `probe` every 20 ms until it returns a value, for at most `ms`. */
export async function eventually<T>(probe: () => Promise<T | undefined>, ms: number, what: string): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what} not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export interface MqttDeviceOptions {
  username?: string;
  password?: string;
  clean?: boolean;
  /** Runs before CONNECT goes out: listeners for what the hub may send right after CONNACK. */
  beforeConnect?: (client: MqttClient) => void;
}

/** Connects mqtt.js as a device (MQTT 3.1.1, TLS, no automatic reconnect); rejects on a refused CONNACK. */
export function connectDevice(hub: TestHub, deviceId: string, key: string, options: MqttDeviceOptions = {}): Promise<MqttClient> {
  const client = mqtt.connect(`mqtts://localhost:${hub.mqttPort}`, {
    protocolVersion: 4,
    clientId: deviceId,
    username: options.username ?? `localhost/${deviceId}/?api-version=2021-04-12`,
    password: options.password ?? createSasToken(`localhost/devices/${deviceId}`, key, Math.floor(Date.now() / 1000) + 600),
    ca: hub.ca,
    clean: options.clean ?? true,
    reconnectPeriod: 0,
    connectTimeout: 5000,
  });
  options.beforeConnect?.(client);
  return new Promise((resolve, reject) => {
    client.once('connect', () => resolve(client));
    client.once('error', (err) => {
      client.end(true);
      reject(err);
    });
  });
}

/** The next message on `client` whose topic starts with `prefix`. */
export function nextMessage(client: MqttClient, prefix: string, ms = 5000): Promise<{ topic: string; payload: Buffer }> {
  return nextEvent(
    (listener) => {
      const onMessage = (topic: string, payload: Buffer) => {
        if (!topic.startsWith(prefix)) return;
        client.off('message', onMessage);
        listener({ topic, payload });
      };
      client.on('message', onMessage);
    },
    ms,
    `message on ${prefix}`,
  );
}

/** Resolves when the hub closes the connection. */
export function closedByHub(client: MqttClient, ms = 5000): Promise<void> {
  return nextEvent<void>((listener) => client.once('close', () => listener()), ms, 'connection close');
}

export interface HubProcess {
  child: ChildProcess;
  hub: TestHub;
}

const HUB_PROCESS = fileURLToPath(new URL('./hub-process.ts', import.meta.url));

/** Starts a hub in a child process (test/hub/hub-process.ts) and connects a REST client to it. */
export async function spawnHub(options: Partial<HubOptions> & { dataDir: string }): Promise<HubProcess> {
  const child = spawn(
    process.execPath,
    [...(process.env.HUB_CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.HUB_CPU_PROF] : []), '--import', 'tsx', HUB_PROCESS, JSON.stringify(options)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(out.split('\n')[0]!);
    });
    child.once('exit', (code) => reject(new Error(`hub process exited with ${code}`)));
  });
  const started = JSON.parse(line) as { urls: { url: string }[]; facts: HubFacts; caCertPath: string };
  const ca = await readFile(started.caCertPath, 'utf8');
  const ownerKey = /;SharedAccessKey=([^;]+)/.exec(started.facts.serviceConnectionString)![1]!;
  const host = options.hostName ?? 'localhost';
  const restUrl = started.urls[1]!.url;
  const client = await restClient(restUrl, ca, () => serviceToken(host, ownerKey));
  const mqttPort = Number(new URL(started.urls[0]!.url).port);
  return {
    child,
    hub: {
      host,
      mqttPort,
      webSocketPort: Number(new URL(started.urls[2]!.url).port),
      amqpPort: Number(new URL(started.urls[3]!.url).port),
      restUrl,
      dataDir: options.dataDir,
      ca,
      caPath: started.caCertPath,
      ownerKey,
      facts: started.facts,
      rest: client.call,
      async createDevice(key) {
        const created = await client.call('PUT', `/devices/${encodeURIComponent(key)}`, {});
        return (created.body as { authentication: { symmetricKey: { primaryKey: string } } }).authentication.symmetricKey.primaryKey;
      },
      connectionString: (key, sharedAccessKey) => `HostName=${host}:${mqttPort};DeviceId=${key};SharedAccessKey=${sharedAccessKey}`,
      close: () => client.agent.close(),
    },
  };
}

/** SIGKILL, and wait until the process is gone. */
export function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** A port free on loopback right now, for programs that cannot take port 0 (redis-server, mosquitto). */
export { freePort };

/**
 * An https.Agent that dials `port` whatever port the URL names: how the device SDKs' transports
 * that always dial 443 (MqttWs, AmqpWs, Http) reach a hub on another port, through their own
 * `webSocketAgent` / `http.agent` options (docs/hub.md).
 */
export class PortAgent extends https.Agent {
  constructor(
    private readonly port: number,
    options?: https.AgentOptions,
  ) {
    super(options);
  }

  override createConnection(options: object, callback?: (err: Error | null, stream: Duplex) => void) {
    return super.createConnection({ ...options, port: this.port }, callback);
  }
}

/** Hosts whose TLS connections a test routes to its hub and lets trust the hub's CA. */
const LOCAL = new Set(['localhost', '127.0.0.1']);

/**
 * The service SDK (azure-iothub) dials `https://<HostName>:443` and `amqps://<HostName>` and takes
 * no CA (its REST client takes no port either); so do the device SDK's file upload (443) and the
 * storage SDK it uploads with. In a test their TLS connections to localhost and 127.0.0.1 trust the
 * hub's CA, and those to port 443 go to the hub's REST port: what a hub on 443 and a trusted CA
 * (`NODE_EXTRA_CA_CERTS`) give a user. The SDKs themselves are untouched; undo with the function returned.
 */
export function routeServiceSdkTo(hub: Pick<TestHub, 'restUrl' | 'ca'>): () => void {
  const restPort = Number(new URL(hub.restUrl).port);
  const original = tls.connect;
  const connect = original as (...args: unknown[]) => tls.TLSSocket;
  const toHub = (given: tls.ConnectionOptions) => ({
    ...given,
    port: given.port === undefined || Number(given.port) === 443 ? restPort : given.port,
    ca: given.ca ?? hub.ca,
  });
  // tls.connect(options[, callback]) (node:https) or tls.connect(port, host, options[, callback]) (rhea).
  const patched = (...args: unknown[]) => {
    const [first, second, third] = args;
    if (typeof first === 'object' && first !== null && LOCAL.has(String((first as tls.ConnectionOptions).host))) return connect(toHub(first), ...args.slice(1));
    if ((typeof first === 'number' || typeof first === 'string') && LOCAL.has(String(second)))
      return connect(toHub({ ...(third as tls.ConnectionOptions), host: second as string, port: Number(first) }), ...args.slice(3));
    return connect(...args);
  };
  (tls as { connect: unknown }).connect = patched;
  return () => {
    (tls as { connect: unknown }).connect = original;
  };
}
