/**
 * The script-trigger server (§1, §4.5, §5, §8): every script of a folder is a
 * URL; calling it runs the script and streams its output back line by line.
 * Optional basic authentication from an htpasswd file; optional TLS from
 * files, the local CA, or ACME HTTP-01, with plain HTTP then redirecting.
 */
import { randomBytes } from 'node:crypto';
import type { Server as HttpsServer } from 'node:https';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Detail, RunningComponent } from '../common/component.ts';
import { withDefaults, type OptionValues, type RuntimeExtras } from '../common/config.ts';
import { createHttpServer, installErrorHandler, listen, sendWireAnswer } from '../common/http.ts';
import { createLogger } from '../common/log.ts';
import { ComponentMetrics } from '../common/metrics.ts';
import type { Counter } from 'prom-client';
import { onShutdownSignal } from '../common/shutdown.ts';
import { resolveTls, type TlsMaterial } from '../common/tls.ts';
import { CertificateManager, type Certificate } from './acme.ts';
import { ScriptCatalog, type Script } from './catalog.ts';
import {
  badPath,
  badSettings,
  cannotStart,
  httpsStarting,
  methodNotAllowed,
  notFound,
  scriptBusy,
  toWireError,
  serverBusy,
  shuttingDown,
  unauthorized,
} from './errors.ts';
import { scriptsFolder } from './examples.ts';
import { PasswordFile } from './htpasswd.ts';
import { renderIndex } from './index-page.ts';
import { scriptsOptions } from './options.ts';
import { parameterVariables, scriptEnvironment } from './params.ts';
import { RunLimiter, startRun, type ScriptRun } from './run.ts';
import { Spawner } from './spawner.ts';
import { chooseFraming, EXIT_EVENT_ID_PREFIX, ScriptResponse } from './stream.ts';

export type ScriptsOptions = OptionValues<typeof scriptsOptions>;

export interface RunningScripts extends RunningComponent {
  /** With --acme: orders a new certificate now and serves it without a restart. */
  renewCertificate(): Promise<Certificate>;
}

/** Paths the server answers itself; scripts with these names at the top are not served. */
const RESERVED = new Set(['/health', '/ready']);
const ROUTE_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];
const FORM = 'application/x-www-form-urlencoded';

interface Context {
  options: ScriptsOptions;
  catalog: ScriptCatalog;
  limiter: RunLimiter;
  passwords: PasswordFile | null;
  /** The authenticated user of each request, when basic authentication is on. */
  users: WeakMap<FastifyRequest, string>;
  /** Scripts running now. */
  runs: Set<ScriptRun>;
  /** Creates the script processes (through a small helper process). */
  spawner: Spawner;
  /** Set when close() starts: a run that starts after it is stopped at once. */
  closing: boolean;
  logger: Logger;
  metrics: ComponentMetrics;
  runsStarted: Counter;
}

function splitUrl(url: string): { path: string; query: string } {
  const mark = url.indexOf('?');
  return mark < 0 ? { path: url, query: '' } : { path: url.slice(0, mark), query: url.slice(mark + 1) };
}

function shownPath(path: string): string {
  return path.length > 200 ? `${path.slice(0, 200)}…` : path;
}

/** Runs the script behind the request and streams its output (the one handler every script shares). */
async function callScript(ctx: Context, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const { path, query } = splitUrl(request.url);
  const script = await ctx.catalog.find(path);
  if (!script) throw notFound(shownPath(path));
  if (script.settingsError) throw badSettings(script.urlPath, script.settingsError);
  if (!(script.settings.methods as string[]).includes(request.method)) throw methodNotAllowed(request.method, script.settings.methods);
  if (String(request.headers['last-event-id'] ?? '').startsWith(EXIT_EVENT_ID_PREFIX)) {
    await reply.code(204).send();
    return;
  }
  const body = Buffer.isBuffer(request.body) ? request.body : null;
  const contentType = request.headers['content-type'];
  const sources = [new URLSearchParams(query)];
  if (body && contentType?.toLowerCase().startsWith(FORM)) sources.push(new URLSearchParams(body.toString('utf8')));
  const env = scriptEnvironment(
    {
      method: request.method,
      urlPath: script.urlPath,
      queryString: query,
      remoteAddress: request.ip,
      contentType,
      contentLength: body?.length ?? 0,
      user: ctx.users.get(request) ?? null,
    },
    parameterVariables(sources),
    process.env,
  );
  // Closing waits for every slot taken: none may be taken once it has begun.
  if (ctx.closing) throw shuttingDown();
  const slot = ctx.limiter.acquire(script.file, script.settings.concurrency);
  if (slot === 'script') throw scriptBusy(script.urlPath, script.settings.concurrency);
  if (slot === 'server') throw serverBusy(ctx.limiter.globalLimit);
  try {
    await streamRun(ctx, script, env, body, request, reply);
  } finally {
    slot();
  }
}

async function streamRun(
  ctx: Context,
  script: Script,
  env: Record<string, string>,
  stdin: Buffer | null,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const response = new ScriptResponse(reply.raw, chooseFraming(request.headers.accept));
  const started = Date.now();
  let run: ScriptRun;
  try {
    run = await startRun({
      script,
      env,
      stdin,
      timeoutMs: script.settings.timeoutMs || ctx.options.timeout * 1000,
      streamStderr: script.settings.streamStderr ?? ctx.options.streamStderr,
      output: response,
      logger: ctx.logger,
      spawner: ctx.spawner,
    });
  } catch (err) {
    throw cannotStart(script.urlPath, (err as NodeJS.ErrnoException).code ?? (err as Error).message);
  }
  reply.hijack();
  ctx.runsStarted.inc();
  ctx.runs.add(run);
  void run.done.then(() => ctx.runs.delete(run));
  // The client may have left while the script was starting: whenClosed then stops it at once.
  response.whenClosed(() => run.stop('disconnected'));
  if (ctx.closing) run.stop('shutdown');
  response.open();
  const result = await run.done;
  response.finish(result, `${run.pid}-${randomBytes(4).toString('hex')}`);
  ctx.logger.info(
    {
      script: script.urlPath,
      user: ctx.users.get(request) ?? null,
      pid: run.pid,
      code: result.code,
      signal: result.signal,
      reason: result.reason,
      ms: Date.now() - started,
    },
    'script run ended',
  );
}

/** Errors fastify raises before routing, in our shape. */
const frameworkErrors = (error: FastifyError, _request: FastifyRequest, reply: FastifyReply) =>
  void sendWireAnswer(reply, toWireError(error.code === 'FST_ERR_BAD_URL' ? badPath() : error));

/** The app that serves the scripts (HTTP, or HTTPS when `tls` is given). */
function scriptApp(ctx: Context, tls: TlsMaterial | null): FastifyInstance {
  const app = createHttpServer({ logger: ctx.logger, tls, bodyLimit: ctx.options.bodyLimit, frameworkErrors, metrics: ctx.metrics });
  // Bodies stay raw: they go to the script's stdin as sent; form fields are read from them too.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  app.addHook('onRequest', async (request) => {
    if (!ctx.passwords || RESERVED.has(request.routeOptions.url ?? '')) return;
    const user = await ctx.passwords.authenticate(request.headers.authorization);
    if (user === null) throw unauthorized(ctx.options.realm);
    ctx.users.set(request, user);
  });
  app.get('/', async (request, reply) => {
    const scripts = await ctx.catalog.list();
    const base = `${request.protocol}://${request.host}`;
    const wantsJson = (request.headers.accept ?? '').includes('application/json');
    return renderIndex(reply, scripts, base, wantsJson ? 'json' : 'html');
  });
  app.route({ method: ROUTE_METHODS, url: '/*', exposeHeadRoute: false, handler: (request, reply) => callScript(ctx, request, reply) });
  app.setNotFoundHandler(async (request) => {
    throw notFound(shownPath(splitUrl(request.url).path));
  });
  installErrorHandler(app, { logger: ctx.logger, toWire: toWireError });
  return app;
}

/** With TLS, the plain HTTP port: ACME challenges first, every other request redirected (301) to HTTPS. */
function redirectApp(logger: Logger, challenges: Map<string, string>, httpsPort: () => number | null, fallbackHost: string): FastifyInstance {
  const app = createHttpServer({ logger, withoutProbes: true, bodyLimit: 1024, frameworkErrors });
  app.get<{ Params: { token: string } }>('/.well-known/acme-challenge/:token', async (request, reply) => {
    const answer = challenges.get(request.params.token);
    if (answer === undefined) throw notFound(shownPath(request.url));
    return reply.type('text/plain').send(answer);
  });
  app.setNotFoundHandler(async (request, reply) => {
    const port = httpsPort();
    if (port === null) throw httpsStarting();
    const hostHeader = /^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:\d+)?$/.exec(request.headers.host ?? '');
    const host = hostHeader?.[1] ?? fallbackHost;
    return reply.redirect(`https://${host}${port === 443 ? '' : `:${port}`}${request.url}`, 301);
  });
  installErrorHandler(app, { logger, toWire: toWireError });
  return app;
}

/** Refuses new runs and stops every running one (each process group: SIGTERM, SIGKILL after a grace). */
function stopRuns(ctx: Context): void {
  ctx.closing = true;
  for (const run of ctx.runs) run.stop('shutdown');
}

/** After the runs have ended, how long responses may take to reach clients before connections are cut. */
const DRAIN_MS = 1000;

/**
 * Stops every run and listening, waits for the runs to end, then lets the
 * last output go out for a moment before cutting connections whose clients
 * do not read or never finished sending: closing is bounded whatever the
 * clients do.
 */
async function closeServer(ctx: Context, apps: FastifyInstance[]): Promise<void> {
  stopRuns(ctx);
  const closed = Promise.all(apps.map((app) => app.close()));
  await ctx.limiter.idle();
  // Keep-alive connections whose last run just ended are idle now; close() ended only those idle at its start.
  for (const app of apps) app.server.closeIdleConnections();
  const cut = setTimeout(() => {
    for (const app of apps) app.server.closeAllConnections();
  }, DRAIN_MS);
  await closed;
  clearTimeout(cut);
  await ctx.spawner.close();
  await ctx.passwords?.close();
}

const noAcme = () => new Error('no ACME certificate: start with --acme');

/** Starts the server; close() stops running scripts and the listeners (see closeServer). */
export async function startScripts(given: Partial<ScriptsOptions> & RuntimeExtras = {}): Promise<RunningScripts> {
  const options = withDefaults(scriptsOptions, given);
  const logger = given.logger ?? createLogger(options.logLevel, 'scripts');
  const folder = await scriptsFolder(options.scriptsDir, options.dataDir);
  const metrics = new ComponentMetrics('scripts');
  const runs = new Set<ScriptRun>();
  metrics.gauge('scripts_running', 'scripts running now', [], (gauge) => gauge.set(runs.size));
  const ctx: Context = {
    metrics,
    runsStarted: metrics.counter('scripts_runs_total', 'script runs started'),
    options,
    catalog: new ScriptCatalog(folder, RESERVED),
    limiter: new RunLimiter(options.maxRunning),
    passwords: options.htpasswd ? await PasswordFile.load(options.htpasswd, logger) : null,
    users: new WeakMap(),
    runs,
    spawner: new Spawner(logger),
    closing: false,
    logger,
  };
  // On SIGTERM the runs stop at once, not when the server's turn to close comes: their grace then overlaps the others'.
  const forgetSignal = onShutdownSignal(() => stopRuns(ctx));
  const details: Detail[] = [{ label: 'scripts folder', value: folder }];
  if (ctx.passwords) details.push({ label: 'basic authentication: users of', value: options.htpasswd });
  if (!options.acme && !options.tls && !options.tlsCert && !options.tlsKey) {
    const app = scriptApp(ctx, null);
    const url = await listen(app, { host: options.host, port: options.port, component: 'scripts' });
    logger.info({ url, folder }, 'script-trigger server listening');
    return {
      urls: [{ label: 'scripts (index at /)', url: `${url}/` }],
      facts: { scripts: { url: `${url}/`, folder } },
      details,
      close: () => {
        forgetSignal();
        return closeServer(ctx, [app]);
      },
      renewCertificate: () => Promise.reject(noAcme()),
    };
  }

  const challenges = new Map<string, string>();
  const manager = options.acme
    ? new CertificateManager(
        { domain: options.acme, directoryUrl: options.acmeDirectory, email: options.acmeEmail, caFile: options.acmeCaFile, dataDir: options.dataDir },
        challenges,
        logger,
      )
    : null;
  let httpsPort: number | null = null;
  const redirect = redirectApp(logger, challenges, () => httpsPort, options.acme || 'localhost');
  const httpUrl = await listen(redirect, { host: options.host, port: options.httpPort, component: 'scripts', portKey: 'httpPort' });
  let app: FastifyInstance | null = null;
  try {
    const tls: TlsMaterial = manager
      ? { ...(await manager.current()), caCertPath: null, handshakeTimeout: options.tlsHandshakeTimeout }
      : await resolveTls(options);
    app = scriptApp(ctx, tls);
    const url = await listen(app, { host: options.host, port: options.httpsPort, component: 'scripts', portKey: 'httpsPort' });
    httpsPort = Number(new URL(url).port || 443);
    const server = app.server as HttpsServer;
    const install = (cert: Certificate) => server.setSecureContext({ cert: cert.cert, key: cert.key });
    manager?.scheduleRenewal(install);
    logger.info({ url, httpUrl, folder, acme: options.acme || null }, 'script-trigger server listening (HTTPS)');
    const httpsApp = app;
    const index = `${options.acme ? url.replace(/\/\/[^:/]+/, `//${options.acme}`) : url}/`;
    return {
      urls: [
        { label: 'scripts over HTTPS (index at /)', url: index },
        { label: 'HTTP (ACME challenges, redirect)', url: httpUrl },
      ],
      facts: { scripts: { url: index, folder } },
      details,
      caCertPath: tls.caCertPath,
      close: async () => {
        manager?.stop();
        forgetSignal();
        await closeServer(ctx, [httpsApp, redirect]);
      },
      renewCertificate: async () => {
        if (!manager) throw noAcme();
        const cert = await manager.renew();
        install(cert);
        return cert;
      },
    };
  } catch (err) {
    forgetSignal();
    await Promise.all([redirect.close(), app?.close()]);
    throw err;
  }
}
