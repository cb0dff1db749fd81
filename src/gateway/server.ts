/**
 * Starts the gateway: the proxy on HTTP and HTTPS, the admin API on
 * loopback, and the declarative configuration they share (hot-swapped by
 * POST /config).
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer as createNetServer, type AddressInfo, type Server } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { join } from 'node:path';
import { commonOptions, describeKey, portOption, tlsOptions, withDefaults, type OptionSchema, type OptionValues, type RuntimeExtras } from '../common/config.ts';
import type { RunningComponent } from '../common/component.ts';
import { ConfigError } from '../common/errors.ts';
import { writeFileAtomic } from '../common/files.ts';
import { formatHost, translateListenError } from '../common/http.ts';
import { createLogger } from '../common/log.ts';
import { resolveTls } from '../common/tls.ts';
import { startAdmin, type GatewayRuntime } from './admin.ts';
import { loadDeclarative, parseDeclarativeText, type LoadedConfig } from './declarative.ts';
import { specDeployment } from './default-config.ts';
import { DeclarativeConfigError } from './errors.ts';
import { Http1Server, type ConnectionCounters } from './http1.ts';
import { CounterStores } from './plugins/rate-limiting/counters.ts';
import { answerClientError, Proxy } from './proxy.ts';
import { UpstreamPools } from './upstream.ts';

/** Largest request head (request line and headers), bytes: Node's default, which the gateway has always had. */
const MAX_HEADER_SIZE = 16 * 1024;

export const gatewayOptions = {
  ...commonOptions,
  ...tlsOptions,
  port: portOption(8000, 'proxy HTTP port (0 = any free port)'),
  httpsPort: portOption(8443, 'proxy HTTPS port (0 = any free port)'),
  adminPort: portOption(8001, 'admin API port (0 = any free port)'),
  adminHost: { type: 'string', default: '127.0.0.1', description: 'address of the admin API (it has no authentication: keep it on loopback)' },
  declarativeConfig: {
    type: 'string',
    default: '',
    description: "Kong 3.0 declarative file (YAML or JSON); empty = the spec's deployment built from the options below",
  },
  usersUrl: { type: 'string', default: 'http://127.0.0.1:8083/api/getusers', description: 'default config: the user API backend behind GET /users' },
  calculatorUrl: { type: 'string', default: 'http://127.0.0.1:8082', description: 'default config: the calculator behind /calc/v1/add/<a>/<b>' },
  consumer: { type: 'string', default: 'demo', description: 'default config: the consumer that owns the API key' },
  apiKey: { type: 'string', default: '', description: 'default config: that consumer\'s key (empty = generated once and kept in the data dir)' },
  redisUrl: { type: 'string', default: '', description: 'default config: redis://host:port to share rate-limit counters between gateways (empty = in process)' },
  trustedIps: { type: 'list', default: [] as string[], description: 'addresses whose X-Forwarded-* / X-Real-IP headers are believed (0.0.0.0/0 = all)' },
  maxBodySize: { type: 'integer', default: 100 * 1024 * 1024, min: 0, description: 'largest request body in bytes (0 = no limit)' },
  clientHeaderTimeout: { type: 'integer', default: 60000, min: 100, description: 'ms a client may take to send its request headers' },
} as const satisfies OptionSchema;
export type GatewayOptions = OptionValues<typeof gatewayOptions>;

/** The demo consumer's key: the option, or one generated on first start and kept (0600) in the data dir. */
async function demoApiKey(options: GatewayOptions): Promise<string> {
  if (options.apiKey) return options.apiKey;
  const file = join(options.dataDir, 'gateway', 'demo-api-key');
  try {
    const key = (await readFile(file, 'utf8')).trim();
    if (key) return key;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const key = randomBytes(24).toString('base64url');
  await writeFileAtomic(file, key + '\n', 0o600);
  return key;
}

/** The default configuration's URLs, checked up front so a bad one names its flag. */
function checkDeploymentUrls(options: GatewayOptions): void {
  const urls = [
    ['usersUrl', options.usersUrl, ['http:', 'https:']],
    ['calculatorUrl', options.calculatorUrl, ['http:', 'https:']],
    ['redisUrl', options.redisUrl, ['redis:', 'rediss:']],
  ] as const;
  for (const [key, value, schemes] of urls) {
    if (key === 'redisUrl' && !value) continue;
    let scheme = '';
    try {
      scheme = new URL(value).protocol;
    } catch {
      // reported below
    }
    if (!(schemes as readonly string[]).includes(scheme)) {
      throw new ConfigError(`invalid value ${JSON.stringify(value)} for ${describeKey('gateway', key)}: expected a ${schemes.map((s) => `${s}//`).join(' or ')} URL`);
    }
  }
}

async function initialDocument(options: GatewayOptions): Promise<{ doc: unknown; source: string }> {
  if (!options.declarativeConfig) {
    checkDeploymentUrls(options);
    const doc = specDeployment({ ...options, apiKey: await demoApiKey(options) });
    return { doc, source: 'built-in spec deployment' };
  }
  let text: string;
  try {
    text = await readFile(options.declarativeConfig, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read --declarative-config ${options.declarativeConfig}: ${(err as Error).message}`);
  }
  return { doc: parseDeclarativeText(text), source: options.declarativeConfig };
}

async function listenRaw(server: Server, host: string, port: number, portKey: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(translateListenError(err, { host, port, component: 'gateway', portKey })));
    server.listen(port, host, () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

export async function startGateway(given: Partial<GatewayOptions> & RuntimeExtras = {}): Promise<RunningComponent> {
  const options = withDefaults(gatewayOptions, given);
  const logger = given.logger ?? createLogger(options.logLevel, 'gateway');
  const counters = new CounterStores(logger);
  const pools = new UpstreamPools();
  const env = { counters, logger };

  const { doc, source } = await initialDocument(options);
  let config: LoadedConfig;
  try {
    config = loadDeclarative(doc, env);
  } catch (err) {
    if (err instanceof DeclarativeConfigError) throw new ConfigError(`${source}: ${err.message}`);
    throw err;
  }
  const tls = await resolveTls(options);

  let httpsPort: number | null = null;
  const proxy = new Proxy({
    config: () => runtime.config,
    pools,
    trustedIps: options.trustedIps,
    maxBodySize: options.maxBodySize,
    httpsPort: () => httpsPort,
    logger,
  });
  // Bodies may stream for long; slow heads are what a slowloris client abuses, so only heads are timed.
  const connectionOptions = { headersTimeout: options.clientHeaderTimeout, keepAliveTimeout: 60_000, maxHeaderSize: MAX_HEADER_SIZE, onBadRequest: answerClientError };
  const plain = new Http1Server({ ...connectionOptions, onRequest: proxy.listener('http') });
  const secure = new Http1Server({ ...connectionOptions, onRequest: proxy.listener('https') });
  const httpServer = createNetServer({ allowHalfOpen: true }, plain.accept);
  const httpsServer = createTlsServer({ cert: tls.cert, key: tls.key, allowHalfOpen: true }, secure.accept);
  const stats = combinedCounters(plain, secure);

  const runtime: GatewayRuntime = {
    config,
    reload(next) {
      this.config = loadDeclarative(next, env);
      logger.info({ hash: this.config.hash }, 'declarative configuration reloaded');
      return this.config;
    },
    stats,
    env,
    listeners: () => ({ proxy: [`${formatHost(options.host)}:${httpPort}`, `${formatHost(options.host)}:${httpsPort} ssl`] }),
  };

  const closers: (() => Promise<void>)[] = [];
  const closeAll = async () => {
    for (const close of closers.reverse()) await close();
    await pools.close();
    await counters.close();
  };
  let httpPort: number;
  try {
    httpPort = await listenRaw(httpServer, options.host, options.port, 'port');
    closers.push(() => closeServer(httpServer, plain));
    httpsPort = await listenRaw(httpsServer, options.host, options.httpsPort, 'httpsPort');
    closers.push(() => closeServer(httpsServer, secure));
    const admin = await startAdmin(runtime, { host: options.adminHost, port: options.adminPort, logger });
    closers.push(admin.close);
    const host = formatHost(options.host);
    logger.info({ http: httpPort, https: httpsPort, admin: admin.url, config: source }, 'gateway listening');
    const credentials = options.declarativeConfig
      ? []
      : [`consumer ${options.consumer}: apikey=${config.entities.keyauth_credentials[0]!.key} (query ?apikey= or header apikey:)`];
    return {
      urls: [
        { label: 'proxy', url: `http://${host}:${httpPort}` },
        { label: 'proxy (TLS)', url: `https://${host}:${httpsPort}` },
        { label: 'admin API', url: admin.url },
        ...(options.declarativeConfig ? [] : [
          { label: 'user API', url: `http://${host}:${httpPort}/users` },
          { label: 'calculator', url: `http://${host}:${httpPort}/calc/v1/add/{a}/{b}` },
        ]),
      ],
      credentials,
      caCertPath: tls.caCertPath,
      exports: { proxyUrl: `http://${host}:${httpPort}`, adminUrl: admin.url },
      close: closeAll,
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

/** Stops accepting, lets in-flight requests finish, and closes keep-alive sockets as soon as they are idle. */
async function closeServer(server: Server, connections: Http1Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  await connections.close();
  await closed;
}

/** What /status reports: both listeners' connections together. */
function combinedCounters(...servers: Http1Server[]): ConnectionCounters {
  const sum = (key: keyof ConnectionCounters) => servers.reduce((total, s) => total + s.counters[key], 0);
  return {
    get accepted() {
      return sum('accepted');
    },
    get active() {
      return sum('active');
    },
    get inFlight() {
      return sum('inFlight');
    },
    get total() {
      return sum('total');
    },
  };
}
