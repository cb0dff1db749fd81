/**
 * The admin API on Kong's paths, in DB-less form: entities can be read, and
 * the whole configuration is replaced at once with POST /config (validated
 * first, then swapped in one step so requests in flight finish on the
 * configuration they started with).
 *
 * It has no authentication (like Kong's on loopback), so it answers only
 * requests meant for it: a Host that names this API (not a DNS-rebound
 * name) and no foreign Origin, and POST /config only as JSON or YAML, which
 * a web page cannot send across origins without the browser asking first.
 *
 * Beside Kong's paths it answers offcloud's own under /_offcloud/ (no Kong
 * admin path begins with `_`): the last proxied requests and a consumer's
 * rate-limit state, which Kong has no call for.
 */
import { ComponentMetrics } from '../common/metrics.ts';
import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { createHttpServer, installErrorHandler, listen } from '../common/http.ts';
import { documentHash, parseDeclarativeText, toDeclarativeYaml } from './config/declarative.ts';
import type { Consumer, Entities } from './config/model.ts';
import { GatewayError, toWireError } from './errors.ts';
import type { ConnectionCounters } from './http/server.ts';
import { PLUGINS } from './plugins/index.ts';
import { renderKongMetrics } from './plugins/prometheus/handler.ts';
import { consumerRateLimits } from './plugins/rate-limiting/state.ts';
import type { PluginEnvironment } from './plugins/types.ts';
import type { LoadedConfig } from './proxy/compile.ts';
import type { TrafficReport } from './proxy/traffic.ts';

export interface GatewayRuntime {
  config: LoadedConfig;
  /** Validates and swaps in a new document; throws DeclarativeConfigError and keeps the old one when invalid. */
  reload(doc: unknown): LoadedConfig;
  /** The proxy's connection figures (with worker processes, as last reported: at most a second old). */
  stats(): ConnectionCounters;
  /** What the proxy answered (counts and last requests), read from every proxy process now. */
  traffic(): Promise<TrafficReport>;
  env: PluginEnvironment;
  listeners(): { proxy: string[] };
  /** The processes that serve the proxy (this one, or the workers). */
  workerPids(): number[];
}

const VERSION = '0.1.0';
const MAX_CONFIG_BYTES = 16 * 1024 * 1024;
type Kind = keyof Entities;

/** The `size` of a list (default 100), or null when it is not one. */
function sizeOf(request: FastifyRequest): number | null {
  const given = (request.query as Record<string, string | undefined>).size;
  const size = given === undefined ? 100 : Number(given);
  return Number.isInteger(size) && size >= 1 && size <= 1000 ? size : null;
}

const BAD_SIZE = { message: 'size must be an integer between 1 and 1000' };

/** Kong's paged list: `{ data, next }`, `size` (default 100) and an opaque `offset`. */
function page<T>(items: T[], request: FastifyRequest, reply: FastifyReply) {
  const query = request.query as Record<string, string | undefined>;
  const size = sizeOf(request);
  if (size === null) return reply.code(400).send(BAD_SIZE);
  const decoded = query.offset === undefined ? '0' : Buffer.from(query.offset, 'base64url').toString('utf8');
  if (!/^\d{1,9}$/.test(decoded)) return reply.code(400).send({ message: 'invalid offset' });
  const offset = Number(decoded);
  const data = items.slice(offset, offset + size);
  const nextOffset = offset + size < items.length ? Buffer.from(String(offset + size)).toString('base64url') : null;
  const path = request.url.split('?')[0];
  return { data, next: nextOffset ? `${path}?size=${size}&offset=${nextOffset}` : null, ...(nextOffset ? { offset: nextOffset } : {}) };
}

/** The body of POST /config: the document itself (JSON), `{ config: "<yaml>" }`, or raw YAML. */
function documentFrom(body: unknown): unknown {
  if (typeof body === 'string') return parseDeclarativeText(body);
  if (
    typeof body === 'object' &&
    body !== null &&
    !Array.isArray(body) &&
    typeof (body as { config?: unknown }).config === 'string' &&
    !('_format_version' in body)
  ) {
    return parseDeclarativeText((body as { config: string }).config);
  }
  return body;
}

/** Entities by id, the shape Kong's POST /config answers with. */
function byId(entities: Entities): Record<string, Record<string, unknown>> {
  return Object.fromEntries(Object.entries(entities).map(([kind, list]) => [kind, Object.fromEntries((list as { id: string }[]).map((e) => [e.id, e]))]));
}

/** Host names that mean this API: IP literals (a rebound DNS name is never one), localhost, its own address and the machine's name. */
function ownHostName(name: string, listenHost: string): boolean {
  const bare = name.startsWith('[') && name.endsWith(']') ? name.slice(1, -1) : name;
  return isIP(bare) !== 0 || bare === 'localhost' || bare === listenHost || bare === hostname().toLowerCase();
}

/** The Host header names this API (its name, and its port when one is given). */
function ownHost(host: string | undefined, listenHost: string, port: number): boolean {
  if (!host) return false;
  let url: URL;
  try {
    url = new URL(`http://${host}`);
  } catch {
    return false;
  }
  return url.host === host.toLowerCase() && ownHostName(url.hostname, listenHost) && (url.port === '' ? port === 80 : Number(url.port) === port);
}

/** An Origin, when the client sent one, is this API's own (what a page it served would send). */
function ownOrigin(origin: string | undefined, listenHost: string, port: number): boolean {
  if (origin === undefined) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  return url.protocol === 'http:' && url.origin === origin.toLowerCase() && ownHost(url.host, listenHost, port);
}

/**
 * The admin API's registry: its own requests, plus the proxy's figures read
 * at scrape: the counters /status shows (with worker processes, as they last
 * reported) and the answers every proxy process counted (asked of each
 * worker then; proxy/traffic.ts).
 */
function proxyMetrics(runtime: GatewayRuntime): ComponentMetrics {
  // One read of the workers per scrape: prom-client collects every metric at once.
  let reading: Promise<TrafficReport> | null = null;
  const tally = async () => {
    reading ??= runtime.traffic().finally(() => (reading = null));
    return (await reading).tally;
  };
  const metrics = new ComponentMetrics('gateway');
  const figures: [string, string, (stats: ConnectionCounters) => number][] = [
    ['gateway_proxy_requests', 'requests the proxy has answered or is answering (Kong total_requests)', (s) => s.total],
    ['gateway_proxy_connections_accepted', 'client connections accepted by the proxy listeners', (s) => s.accepted],
    ['gateway_proxy_connections_active', 'client connections open now', (s) => s.active],
    ['gateway_proxy_requests_in_flight', 'requests being answered now', (s) => s.inFlight],
  ];
  for (const [name, help, read] of figures) metrics.gauge(name, help, [], (gauge) => gauge.set(read(runtime.stats())));
  metrics.counter(
    'gateway_proxy_responses_total',
    'answers of the proxy by service, route and status (route "" when none matched)',
    ['service', 'route', 'status'],
    async (counter) => {
      const { answers } = await tally();
      counter.reset();
      for (const { service, route, status, count } of answers) counter.inc({ service, route, status: String(status) }, count);
    },
  );
  metrics.counter(
    'gateway_plugin_rejections_total',
    'requests a plugin answered itself instead of proxying them (key-auth 401, rate-limiting 429), by plugin, service, route and status',
    ['plugin', 'service', 'route', 'status'],
    async (counter) => {
      const { rejections } = await tally();
      counter.reset();
      for (const { plugin, service, route, status, count } of rejections) counter.inc({ plugin, service, route, status: String(status) }, count);
    },
  );
  // Kong's prometheus plugin exposes its metrics on the admin /metrics while it is configured.
  metrics.append(async () => {
    if (!runtime.config.entities.plugins.some((p) => p.name === 'prometheus' && p.enabled)) return '';
    const stats = runtime.stats();
    return renderKongMetrics((await tally()).series, { requests: stats.total, active: stats.active, accepted: stats.accepted });
  });
  return metrics;
}

export async function startAdmin(runtime: GatewayRuntime, options: { host: string; port: number; logger: Logger }) {
  const app = createHttpServer({ logger: options.logger, bodyLimit: MAX_CONFIG_BYTES, metrics: proxyMetrics(runtime) });
  // JSON (fastify's own) and YAML only: form and text/plain bodies are what a page can post cross-origin unasked.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser(['text/yaml', 'application/yaml', 'application/x-yaml'], { parseAs: 'string' }, (_req, body, done) => done(null, body));
  let port = options.port;
  app.addHook('onRequest', async (request) => {
    if (!ownHost(request.headers.host, options.host, port)) throw new GatewayError(403, 'Forbidden: the Host header does not name this admin API');
    if (!ownOrigin(request.headers.origin, options.host, port)) throw new GatewayError(403, 'Forbidden: requests from another origin are refused');
  });
  const nodeId = randomUUID();
  const entities = () => runtime.config.entities;
  const find = (kind: Kind, key: string) =>
    (entities()[kind] as { id: string; name?: string | null; username?: string | null }[]).find((e) => e.id === key || e.name === key || e.username === key);
  const one = (kind: Kind) => async (request: FastifyRequest<{ Params: { key: string } }>, reply: FastifyReply) =>
    find(kind, request.params.key) ?? reply.code(404).send({ message: 'Not found' });
  const children =
    <T>(parent: Kind, list: (id: string) => T[]) =>
    async (request: FastifyRequest<{ Params: { key: string } }>, reply: FastifyReply) => {
      const found = find(parent, request.params.key);
      return found ? page(list(found.id), request, reply) : reply.code(404).send({ message: 'Not found' });
    };

  app.get('/', async () => ({
    tagline: 'Welcome to the offcloud gateway (Kong 3.x compatible, DB-less)',
    version: VERSION,
    hostname: hostname(),
    node_id: nodeId,
    pids: { master: process.pid, workers: runtime.workerPids() },
    configuration: {
      database: 'off',
      role: 'traditional',
      router_flavor: 'traditional',
      proxy_listeners: runtime.listeners().proxy,
      admin_listen: [`${options.host}:${options.port}`],
    },
    plugins: {
      available_on_server: Object.fromEntries([...PLUGINS.values()].map((p) => [p.name, { version: VERSION, priority: p.priority }])),
      enabled_in_cluster: [...new Set(entities().plugins.map((p) => p.name))],
    },
  }));
  app.get('/status', async () => {
    const memory = process.memoryUsage();
    const stats = runtime.stats();
    return {
      memory: {
        workers_lua_vms: [{ pid: process.pid, http_allocated_gc: `${(memory.heapUsed / 2 ** 20).toFixed(2)} MiB` }],
        rss: `${(memory.rss / 2 ** 20).toFixed(2)} MiB`,
      },
      server: {
        connections_accepted: stats.accepted,
        connections_active: stats.active,
        connections_handled: stats.accepted,
        connections_reading: 0,
        connections_writing: stats.inFlight,
        connections_waiting: Math.max(0, stats.active - stats.inFlight),
        total_requests: stats.total,
      },
      configuration_hash: runtime.config.hash,
    };
  });
  app.get('/plugins/enabled', async () => ({ enabled_plugins: [...PLUGINS.keys()] }));
  for (const kind of ['services', 'routes', 'consumers', 'plugins', 'certificates', 'snis'] as const) {
    app.get(`/${kind}`, async (request, reply) => page<unknown>(entities()[kind], request, reply));
    app.get(`/${kind}/:key`, one(kind));
  }
  app.get('/key-auths', async (request, reply) => page(entities().keyauth_credentials, request, reply));
  app.get(
    '/services/:key/routes',
    children('services', (id) => entities().routes.filter((r) => r.service?.id === id)),
  );
  app.get(
    '/services/:key/plugins',
    children('services', (id) => entities().plugins.filter((p) => p.service?.id === id)),
  );
  app.get(
    '/routes/:key/plugins',
    children('routes', (id) => entities().plugins.filter((p) => p.route?.id === id)),
  );
  app.get(
    '/consumers/:key/plugins',
    children('consumers', (id) => entities().plugins.filter((p) => p.consumer?.id === id)),
  );
  app.get(
    '/certificates/:key/snis',
    children('certificates', (id) => entities().snis.filter((s) => s.certificate.id === id)),
  );
  app.get(
    '/consumers/:key/key-auth',
    children('consumers', (id) => entities().keyauth_credentials.filter((c) => c.consumer.id === id)),
  );

  // Upstreams and their targets (Kong's paths). Health checks are off, which /health reports as Kong does.
  app.get('/upstreams', async (request, reply) => page(entities().upstreams, request, reply));
  app.get('/upstreams/:key', one('upstreams'));
  const targetsOf = (id: string) => entities().targets.filter((t) => t.upstream.id === id);
  app.get('/upstreams/:key/targets', children('upstreams', targetsOf));
  app.get('/upstreams/:key/targets/all', children('upstreams', targetsOf));
  app.get(
    '/upstreams/:key/health',
    children('upstreams', (id) => targetsOf(id).map((t) => ({ ...t, health: runtime.config.health.get(id)!.status(t.target) }))),
  );
  app.get('/upstreams/:key/targets/:target', async (request: FastifyRequest<{ Params: { key: string; target: string } }>, reply) => {
    const upstream = find('upstreams', request.params.key);
    const { target } = request.params;
    const found = upstream && targetsOf(upstream.id).find((t) => t.id === target || t.target === target || t.target === `${target}:8000`);
    return found ?? reply.code(404).send({ message: 'Not found' });
  });

  app.get('/_offcloud/requests', async (request, reply) => {
    const size = sizeOf(request);
    if (size === null) return reply.code(400).send(BAD_SIZE);
    const { recent } = await runtime.traffic();
    return { data: recent.slice(0, size).map((r) => ({ ...r, time: new Date(r.time).toISOString() })) };
  });
  app.get('/_offcloud/consumers/:key/rate-limits', async (request: FastifyRequest<{ Params: { key: string } }>, reply) => {
    const consumer = find('consumers', request.params.key) as Consumer | undefined;
    if (!consumer) return reply.code(404).send({ message: `Not found: no consumer has the id or username ${JSON.stringify(request.params.key)}` });
    return {
      consumer: { id: consumer.id, username: consumer.username },
      data: await consumerRateLimits(runtime.config, consumer, runtime.env.counters),
    };
  });

  app.get('/config', async () => ({ config: toDeclarativeYaml(entities()) }));
  app.post('/config', async (request, reply) => {
    const query = request.query as Record<string, string | undefined>;
    const doc = documentFrom(request.body);
    if ((query.check_hash === '1' || query.check_hash === 'true') && documentHash(doc) === runtime.config.hash) return reply.code(304).send();
    return reply.code(201).send(byId(runtime.reload(doc).entities));
  });
  // DB-less: entities change only through POST /config, as in Kong.
  for (const url of ['/:kind', '/:kind/*']) {
    app.route({
      method: ['POST', 'PUT', 'PATCH', 'DELETE'],
      url,
      handler: async (request, reply) =>
        reply.code(405).send({
          message: `cannot ${request.method.toLowerCase()} '${(request.params as { kind: string }).kind}' entities when not using a database; use POST /config`,
        }),
    });
  }
  app.setNotFoundHandler(async (_request, reply) => reply.code(404).send({ message: 'Not found' }));
  installErrorHandler(app, { logger: options.logger, toWire: toWireError });
  const url = await listen(app, { host: options.host, port: options.port, component: 'gateway', portKey: 'adminPort' });
  port = Number(new URL(url).port);
  return { url, close: () => app.close() };
}
