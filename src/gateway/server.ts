/**
 * Starts the gateway: the proxy on HTTP and HTTPS, the admin API on
 * loopback, and the declarative configuration they share (hot-swapped by
 * POST /config).
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { createServer as createNetServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { describeKey, withDefaults, type OptionValues, type RuntimeExtras } from '../common/config.ts';
import type { RunningComponent } from '../common/component.ts';
import type { GatewayFacts } from '../common/facts.ts';
import { ConfigError } from '../common/errors.ts';
import { writeFileAtomic } from '../common/files.ts';
import { formatHost, translateListenError } from '../common/http.ts';
import { createLogger } from '../common/log.ts';
import { resolveTls } from '../common/tls.ts';
import { startAdmin, type GatewayRuntime } from './admin.ts';
import { parseDeclarativeText } from './config/declarative.ts';
import { specDeployment } from './config/default-config.ts';
import { DeclarativeConfigError, findingLine } from './errors.ts';
import { gatewayOptions } from './options.ts';
import { CounterStores } from './plugins/rate-limiting/policies.ts';
import { pluginEnvironment } from './plugins/types.ts';
import { WorkerProcesses } from './processes/worker-processes.ts';
import { ProxyService, type ProxySettings, type Scheme } from './processes/service.ts';
import { compileConfig, type LoadedConfig } from './proxy/compile.ts';

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
      throw new ConfigError(
        `invalid value ${JSON.stringify(value)} for ${describeKey('gateway', key)}: expected a ${schemes.map((s) => `${s}//`).join(' or ')} URL`,
      );
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

/** What a configuration loaded with a warning about, once each, naming where it came from. */
function logWarnings(logger: Logger, source: string, config: LoadedConfig): void {
  for (const warning of config.warnings) logger.warn({ config: source, path: warning.path }, `${source}: ${findingLine(warning)}`);
}

async function listenRaw(server: Server, host: string, port: number, portKey: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(translateListenError(err, { host, port, component: 'gateway', portKey })));
    server.listen(port, host, () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

/** What tests may give a gateway besides its options: the clock its plugins read (ms since the epoch). */
export interface GatewayExtras extends RuntimeExtras {
  clock?: () => number;
}

export async function startGateway(given: Partial<GatewayOptions> & GatewayExtras = {}): Promise<RunningComponent> {
  const options = withDefaults(gatewayOptions, given);
  const logger = given.logger ?? createLogger(options.logLevel, 'gateway');
  const counters = new CounterStores(logger);
  const env = pluginEnvironment(logger, counters, given.clock);

  let config: LoadedConfig;
  let loaded: { doc: unknown; source: string };
  try {
    loaded = await initialDocument(options);
    config = compileConfig(loaded.doc, env);
  } catch (err) {
    if (err instanceof DeclarativeConfigError) throw new ConfigError(err.describe(options.declarativeConfig || 'built-in spec deployment'));
    throw err;
  }
  const { doc, source } = loaded;
  logWarnings(logger, source, config);
  const tls = await resolveTls(options);

  let httpsPort: number | null = null;
  // One process serves, or worker processes do and this one only listens (and keeps the admin API and counters).
  const proxySettings: ProxySettings = {
    trustedIps: options.trustedIps,
    maxBodySize: options.maxBodySize,
    clientHeaderTimeout: options.clientHeaderTimeout,
    keepAliveTimeout: options.keepAliveTimeout,
    tlsHandshakeTimeout: options.tlsHandshakeTimeout,
    tls: { cert: tls.cert, key: tls.key },
  };
  const service =
    options.workers === 1 ? new ProxyService({ ...proxySettings, config: () => runtime.config, httpsPort: () => httpsPort, logger, series: env.series }) : null;
  let workers: WorkerProcesses | null = null;
  const accept = (scheme: Scheme) => (socket: Socket) => (service ? service.accept(socket, scheme) : workers?.dispatch(socket, scheme));
  // With workers, no byte is read here: the socket goes to a worker as it is. (Half-open
  // sockets are allowed where connections are served, ProxyService.accept.)
  const listenerOptions = { pauseOnConnect: service === null };
  const httpServer = createNetServer(listenerOptions, accept('http'));
  const httpsServer = createNetServer(listenerOptions, accept('https'));

  const runtime: GatewayRuntime = {
    config,
    reload(next) {
      this.config = compileConfig(next, env);
      logWarnings(logger, 'POST /config', this.config);
      workers?.reload(next);
      logger.info({ hash: this.config.hash }, 'declarative configuration reloaded');
      return this.config;
    },
    stats: () => (service ? service.counters() : workers!.stats()),
    traffic: async () => (service ? service.traffic.report() : workers!.traffic()),
    workerPids: () => (service ? [process.pid] : workers!.pids()),
    env,
    listeners: () => ({ proxy: [`${formatHost(options.host)}:${httpPort}`, `${formatHost(options.host)}:${httpsPort} ssl`] }),
  };

  const closers: (() => Promise<void>)[] = [];
  const closeAll = async () => {
    for (const close of closers.reverse()) await close();
    await counters.close();
  };
  let httpPort: number;
  try {
    // Stop accepting first, then let the proxy (or the workers) finish what is in flight.
    closers.push(async () => {
      const stopped = [httpServer, httpsServer]
        .filter((server) => server.listening)
        .map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
      if (service) {
        await service.close();
        await Promise.all(stopped);
      } else {
        // Node tracks sockets handed to a child and would wait for it to report them closed: the workers' own close is the wait.
        await workers?.close();
      }
    });
    httpPort = await listenRaw(httpServer, options.host, options.port, 'port');
    httpsPort = await listenRaw(httpsServer, options.host, options.httpsPort, 'httpsPort');
    if (!service) {
      const pool = new WorkerProcesses(options.workers, { logLevel: options.logLevel, proxy: proxySettings, httpsPort, doc }, counters.local, logger);
      workers = pool;
      await pool.start();
    }
    const admin = await startAdmin(runtime, { host: options.adminHost, port: options.adminPort, logger });
    closers.push(admin.close);
    const host = formatHost(options.host);
    logger.info({ http: httpPort, https: httpsPort, admin: admin.url, config: source, workers: options.workers }, 'gateway listening');
    const facts: GatewayFacts = {
      proxyUrl: `http://${host}:${httpPort}`,
      proxyTlsUrl: `https://${host}:${httpsPort}`,
      adminUrl: admin.url,
      ...(!options.declarativeConfig && { demoConsumer: { username: options.consumer, apiKey: config.entities.keyauth_credentials[0]!.key } }),
    };
    return {
      urls: [
        { label: 'proxy', url: `http://${host}:${httpPort}` },
        { label: 'proxy (TLS)', url: `https://${host}:${httpsPort}` },
        { label: 'admin API', url: admin.url },
        ...(options.declarativeConfig
          ? []
          : [
              { label: 'user API', url: `http://${host}:${httpPort}/users` },
              { label: 'calculator', url: `http://${host}:${httpPort}/calc/v1/add/{a}/{b}` },
            ]),
      ],
      facts: { gateway: facts },
      details: facts.demoConsumer
        ? [{ label: `consumer ${facts.demoConsumer.username}'s key (query ?apikey= or header apikey:)`, value: facts.demoConsumer.apiKey }]
        : [],
      caCertPath: tls.caCertPath,
      close: closeAll,
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
