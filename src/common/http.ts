/**
 * The HTTP server factory every component uses: fastify with structured
 * logging, optional TLS, body limits, GET /health and GET /ready, and a
 * listen() that turns a taken port into a message naming the option.
 */
import type { IncomingMessage } from 'node:http';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { Logger } from 'pino';
import { UnusedConnections } from './connections.ts';
import { clientErrorStatus, StartupError, WireError, type WireAnswer } from './errors.ts';
import { isDiskFull } from './files.ts';
import { ComponentMetrics } from './metrics.ts';
import { describeKey } from './config.ts';
import { cutAfterDrain, onShutdownSignal } from './shutdown.ts';
import { CLIENT_CERTIFICATE_OPTIONS, type TlsMaterial } from './tls.ts';

export interface HttpServerOptions {
  logger: Logger;
  /** Serve HTTPS with this certificate; plain HTTP when absent. */
  tls?: TlsMaterial | null;
  /** Largest request body accepted, in bytes (default 1 MiB). */
  bodyLimit?: number;
  /** Longest path parameter routed, in characters (fastify's default: 100). */
  maxParamLength?: number;
  /** Answers GET /ready: true once the component can serve. */
  ready?: () => boolean;
  /** Leave GET /health and /ready to the component (it has its own). */
  withoutProbes?: boolean;
  /**
   * Answers errors fastify raises before routing (a URL with broken
   * percent-encoding: FST_ERR_BAD_URL) in the component's own error shape;
   * fastify's JSON error when absent.
   */
  frameworkErrors?: FastifyServerOptions['frameworkErrors'];
  /**
   * Where GET /metrics and the request metrics go: the component's own
   * registry when it counts things of its own, a new one by default, none
   * (`false`) for a server that only redirects.
   */
  metrics?: ComponentMetrics | false;
}

export function createHttpServer(options: HttpServerOptions): FastifyInstance {
  const app = Fastify({
    loggerInstance: options.logger,
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    ...(options.maxParamLength ? { routerOptions: { maxParamLength: options.maxParamLength } } : {}),
    // On close, idle keep-alive sockets end at once; busy ones finish first.
    forceCloseConnections: 'idle',
    // Node's own bound on receiving a whole request, which fastify turns off:
    // a client trickling (or no longer sending) a body must not hold a connection for ever.
    requestTimeout: 300_000,
    // Per-request lines would drown the logs at load; components log what matters.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    ...(options.frameworkErrors ? { frameworkErrors: options.frameworkErrors } : {}),
    // A connection that has not finished its handshake in time is closed (Node reports it
    // as tlsClientError and, with no listener there, destroys the socket).
    ...(options.tls
      ? {
          https: {
            cert: options.tls.cert,
            key: options.tls.key,
            handshakeTimeout: options.tls.handshakeTimeout,
            ...(options.tls.requestClientCertificate ? CLIENT_CERTIFICATE_OPTIONS : {}),
          },
        }
      : {}),
  }) as unknown as FastifyInstance;
  // Responses finished while closing carry `Connection: close`, so keep-alive
  // clients let go and close() completes as soon as in-flight work is done.
  let closing = false;
  // node:http counts a connection that has not sent a request yet (a
  // browser's preconnect, a TLS handshake not finished) as neither idle nor
  // busy, so close() would wait for the client to drop it: those end on close.
  const unused = new UnusedConnections(app.server);
  app.server.on('request', (request: IncomingMessage) => unused.used(request.socket));
  app.addHook('preClose', async () => {
    closing = true;
    unused.destroy();
  });
  // A shutdown signal starts the drain on every server at once (the
  // components close one after another): keep-alive ends now, and a client
  // that stopped sending or reading mid-request is cut after the drain.
  const forgetSignal = onShutdownSignal(() => {
    closing = true;
    app.server.closeIdleConnections();
  });
  const forgetCut = cutAfterDrain(() => app.server.closeAllConnections());
  app.addHook('onClose', async () => {
    forgetSignal();
    forgetCut();
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });
  const metrics = options.metrics ?? (options.withoutProbes ? false : new ComponentMetrics(componentOf(options.logger)));
  if (metrics) serveMetrics(app, metrics);
  if (!options.withoutProbes) {
    const ready = options.ready ?? (() => true);
    app.get('/health', async () => ({ status: 'ok' }));
    app.get('/ready', async (_req, reply) => {
      if (ready()) return { status: 'ready' };
      return reply.code(503).send({ status: 'starting' });
    });
  }
  return app;
}

function componentOf(logger: Logger): string {
  const { component } = logger.bindings() as { component?: unknown };
  return typeof component === 'string' ? component : 'offcloud';
}

/** GET /metrics in Prometheus' text format, with every request counted by route and status. */
function serveMetrics(app: FastifyInstance, metrics: ComponentMetrics): void {
  const http = metrics.http();
  metrics.watchConnections(app.server);
  app.addHook('onResponse', async (request, reply) => {
    http.observe(request.method, request.routeOptions.url, reply.statusCode, reply.elapsedTime / 1000);
  });
  app.get('/metrics', async (_request, reply) => {
    const { contentType, body } = await metrics.render();
    return reply.type(contentType).send(body);
  });
}

export interface ErrorContract {
  logger: Pick<Logger, 'error' | 'warn'>;
  /** The component's one mapping (its `errors.ts`) from any failure to its wire form. */
  toWire: (error: unknown, request: FastifyRequest) => WireAnswer;
}

/**
 * The one error handler of every HTTP component: the component maps, this
 * answers. Failures that are neither the component's own wire errors nor a bad
 * request fastify caught are unexpected, so they are logged (with the request
 * line); the client sees only what the mapping says.
 */
export function installErrorHandler(app: FastifyInstance, contract: ErrorContract): void {
  app.setErrorHandler(async (error, request, reply) => {
    if (isDiskFull(error)) {
      contract.logger.warn({ path: (error as NodeJS.ErrnoException).path, method: request.method, url: request.url }, 'disk full: request refused');
    } else if (!(error instanceof WireError) && clientErrorStatus(error) === undefined) {
      contract.logger.error({ err: error, method: request.method, url: request.url }, 'request failed');
    }
    return sendWireAnswer(reply, contract.toWire(error, request));
  });
}

/** Sends a mapped failure (also from `frameworkErrors`, which runs before any handler). */
export function sendWireAnswer(reply: FastifyReply, answer: WireAnswer): FastifyReply {
  if (answer.headers) reply.headers(answer.headers);
  return reply.code(answer.status).send(answer.body);
}

export interface ListenOptions {
  host: string;
  port: number;
  /** Component and option key that set this port, for the "port in use" message. */
  component: string;
  portKey?: string;
}

/** Listens and returns the bound address as a URL base (`http://127.0.0.1:8082`). */
export async function listen(app: FastifyInstance, options: ListenOptions): Promise<string> {
  try {
    await app.listen({ host: options.host, port: options.port });
  } catch (err) {
    throw translateListenError(err, options);
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const scheme = 'setSecureContext' in app.server ? 'https' : 'http';
  return `${scheme}://${formatHost(options.host)}:${port}`;
}

/** Listens on several servers in turn (a component's endpoints); if one fails, those already listening close. */
export async function listenEach(servers: [FastifyInstance, ListenOptions][]): Promise<string[]> {
  const urls: string[] = [];
  for (const [app, options] of servers) {
    try {
      urls.push(await listen(app, options));
    } catch (err) {
      await Promise.all(servers.slice(0, urls.length).map(([started]) => started.close()));
      throw err;
    }
  }
  return urls;
}

export function formatHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return 'localhost';
  return host.includes(':') ? `[${host}]` : host;
}

/** Turns EADDRINUSE/EACCES from any server's listen into a clear StartupError. */
export function translateListenError(err: unknown, options: ListenOptions): Error {
  const code = (err as NodeJS.ErrnoException).code;
  const key = options.portKey ?? 'port';
  const how = `change it with ${describeKey(options.component, key)}, or --${options.component}-${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} under \`offcloud up\``;
  if (code === 'EADDRINUSE') {
    return new StartupError(`${options.component}: port ${options.port} on ${options.host} is already in use; ${how}`);
  }
  if (code === 'EACCES') {
    return new StartupError(`${options.component}: not allowed to listen on port ${options.port} (ports below 1024 need root or CAP_NET_BIND_SERVICE); ${how}`);
  }
  if (code === 'EADDRNOTAVAIL') {
    return new StartupError(`${options.component}: address ${options.host} is not available on this machine; change it with --host`);
  }
  return err as Error;
}
