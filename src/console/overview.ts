/**
 * The overview page's data: every component the console knows of, its URLs
 * and credential lines, and whether it answers now (GET /health and /ready
 * on an HTTP URL, a TCP connection for MQTT and gRPC).
 */
import { connect } from 'node:net';
import type { Dispatcher } from 'undici';
import { request as undiciRequest } from 'undici';
import type { OptionValues } from '../common/config.ts';
import type { consoleOptions } from './options.ts';
import { connectionStringFields } from './connection-string.ts';

type ConsoleValues = OptionValues<typeof consoleOptions>;

export interface ComponentEntry {
  name: string;
  endpoints: { label: string; url: string }[];
  credentials: string[];
}

/** `no probe`: it answers, but not to GET /health (a proxy, an admin API); `unknown`: no address to try. */
export type Probe = 'up' | 'down' | 'not ready' | 'no probe' | 'unknown';

export interface ComponentStatus extends ComponentEntry {
  health: Probe;
  ready: Probe;
}

const PROBE_TIMEOUT_MS = 2000;

/** The components as `up` announced them, or, started alone, as the options name them. */
export function componentEntries(options: ConsoleValues): ComponentEntry[] {
  const byName = new Map<string, ComponentEntry>();
  const entry = (name: string) => {
    let found = byName.get(name);
    if (!found) byName.set(name, (found = { name, endpoints: [], credentials: [] }));
    return found;
  };
  for (const line of options.endpoints) {
    const [name, label, ...url] = line.split('|');
    if (name && label && url.length) entry(name).endpoints.push({ label, url: url.join('|') });
  }
  for (const line of options.credentials) {
    const bar = line.indexOf('|');
    if (bar > 0) entry(line.slice(0, bar)).credentials.push(line.slice(bar + 1));
  }
  if (byName.size) return [...byName.values()];
  const given: [string, string, string][] = [
    ['hub', 'REST (service)', options.hubUrl],
    ['storage', 'blob endpoint', connectionStringFields(options.storageConnectionString).get('BlobEndpoint') ?? ''],
    ['identity', 'token issuer (authority host)', options.identityUrl],
    ['identity', 'managed identity (IMDS)', options.identityImdsUrl],
    ['gateway', 'proxy', options.gatewayProxyUrl],
    ['gateway', 'admin API', options.gatewayAdminUrl],
    ['scripts', 'scripts (index at /)', options.scriptsUrl],
    ['sentiment', 'Text Analytics', options.sentimentUrl],
    ['face', 'Face', options.faceUrl],
    ['scoring-frontend', 'score', options.scoringUrl],
    ['billing', 'billing endpoint', options.billingUrl],
    ['devdata', 'REST', options.devdataUrl],
    ['devsvc', 'gRPC DevSvc', options.devsvcAddress ? `grpc://${options.devsvcAddress}` : ''],
  ];
  for (const [name, label, url] of given) if (url) entry(name).endpoints.push({ label, url });
  if (options.hubConnectionString) entry('hub').credentials.push(`service: ${options.hubConnectionString}`);
  if (options.storageConnectionString) entry('storage').credentials.push(`connection string: ${options.storageConnectionString}`);
  return [...byName.values()];
}

async function probeHttp(dispatcher: Dispatcher, url: URL): Promise<Probe> {
  try {
    const answer = await undiciRequest(url, { dispatcher, signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    await answer.body.dump();
    if (answer.statusCode === 200) return 'up';
    return answer.statusCode === 503 ? 'not ready' : 'no probe';
  } catch {
    return 'down';
  }
}

function probeTcp(url: URL): Promise<Probe> {
  return new Promise((resolve) => {
    const socket = connect({ host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port), timeout: PROBE_TIMEOUT_MS });
    const done = (probe: Probe) => {
      socket.destroy();
      resolve(probe);
    };
    socket.once('connect', () => done('up'));
    socket.once('timeout', () => done('down'));
    socket.once('error', () => done('down'));
  });
}

function parsed(url: string): URL | undefined {
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}

/**
 * Where not to ask GET /health and /ready: the gateway's proxy answers only its routes, so
 * a probe there is a 404 in the gateway's own recent requests and figures. Its admin API's
 * GET /status (Kong's node status) tells whether the gateway is up instead.
 */
export interface ProbeTargets {
  unprobed: ReadonlySet<string>;
  /** Origins whose health is their GET <path> (200: up and ready); their component is asked there only. */
  statusPaths: ReadonlyMap<string, string>;
}

function originOf(url: string): string | undefined {
  return parsed(url)?.origin;
}

export function probeTargets(options: Pick<ConsoleValues, 'gatewayProxyUrl' | 'gatewayAdminUrl'>): ProbeTargets {
  const proxy = originOf(options.gatewayProxyUrl);
  const admin = originOf(options.gatewayAdminUrl);
  return { unprobed: new Set(proxy ? [proxy] : []), statusPaths: new Map(admin ? [[admin, '/status']] : []) };
}

async function probeOrigin(dispatcher: Dispatcher, origin: string, statusPath: string | undefined): Promise<{ health: Probe; ready: Probe }> {
  if (statusPath) {
    const status = await probeHttp(dispatcher, new URL(statusPath, origin));
    return { health: status, ready: status };
  }
  const [health, ready] = await Promise.all([probeHttp(dispatcher, new URL('/health', origin)), probeHttp(dispatcher, new URL('/ready', origin))]);
  return { health, ready };
}

export async function probeComponent(dispatcher: Dispatcher, component: ComponentEntry, targets: ProbeTargets): Promise<ComponentStatus> {
  const urls = component.endpoints.map((e) => parsed(e.url.replace(/\{[^}]*\}/g, 'x'))).filter((u): u is URL => u !== undefined);
  const http = urls.filter((u) => u.protocol === 'http:' || u.protocol === 'https:');
  const all = [...new Set(http.map((u) => u.origin))];
  // A component with a status origin is asked there only (the gateway: not its TLS proxy either).
  const statusOrigin = all.find((origin) => targets.statusPaths.has(origin));
  const origins = statusOrigin ? [statusOrigin] : all.filter((origin) => !targets.unprobed.has(origin));
  let best: { health: Probe; ready: Probe } | undefined;
  for (const origin of origins) {
    const { health, ready } = await probeOrigin(dispatcher, origin, targets.statusPaths.get(origin));
    if (health === 'up') return { ...component, health, ready };
    if (!best || best.health === 'down') best = { health, ready };
  }
  if (best) return { ...component, ...best };
  const socket = urls.find((u) => u.port && !targets.unprobed.has(u.origin));
  const health = socket ? await probeTcp(socket) : 'unknown';
  return { ...component, health, ready: health };
}
