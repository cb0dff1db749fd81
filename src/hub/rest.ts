/**
 * The cloud-side API over HTTPS (443, or 8884 when not root), in the real service's REST shapes
 * where practical: /devices, /twins (ETag/If-Match), /twins/{id}/methods, plus
 * our own C2D send and telemetry read/follow (the real service uses AMQP and
 * Event Hubs for those). Every call carries a hub policy SAS (`iothubowner`).
 */
import type { ComponentMetrics } from '../common/metrics.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { createHttpServer, installErrorHandler, listen, sendWireAnswer } from '../common/http.ts';
import type { TlsMaterial } from '../common/tls.ts';
import { ServiceRefused, type DeviceHub } from './domain/hub.ts';
import type { TelemetryMessage } from './domain/messages.ts';
import { identityKey, validateId, type Identity } from './domain/registry.ts';
import type { Right } from './domain/policies.ts';
import { HubError } from './domain/errors.ts';
import { toWireError } from './errors.ts';
import { WEBSOCKET_PATH } from './websocket.ts';
import { registerDeviceApi } from './device-http.ts';
import { presentedChain } from './client-certificate.ts';

export interface RestOptions {
  host: string;
  port: number;
  tls: TlsMaterial;
  logger: Logger;
  /** The hub's registry: GET /metrics on the REST port serves the whole component. */
  metrics: ComponentMetrics;
}

type IdParams = { id: string; mid?: string };

function identityOf(params: IdParams): Identity {
  const deviceId = validateId(params.id, 'deviceId');
  return params.mid === undefined ? { deviceId } : { deviceId, moduleId: validateId(params.mid, 'moduleId') };
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

const ifMatch = (request: FastifyRequest) => header(request, 'if-match');

function integerQuery(value: unknown, name: string, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  const n = typeof value === 'string' && /^\d{1,15}$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n > max) throw new HubError('ArgumentInvalid', `${name} must be an integer from 0 to ${max}`);
  return n;
}

const SSE_HEARTBEAT_MS = 15_000;

export async function startRestApi(hub: DeviceHub, options: RestOptions): Promise<{ url: string; app: FastifyInstance }> {
  const { logger } = options;
  const app = createHttpServer({
    logger,
    metrics: options.metrics,
    tls: options.tls,
    bodyLimit: 512 * 1024,
    // A file upload's correlation id travels in the path (`/files/notifications/{correlationId}`) and names its blob.
    maxParamLength: 4096,
    // A URL fastify cannot route (broken percent-encoding) still gets the hub's error shape.
    frameworkErrors: (error, _request, reply) => sendWireAnswer(reply as FastifyReply, toWireError(new HubError('ArgumentInvalid', error.message))),
  });
  // Open event streams never go idle, so closing ends them first.
  const streams = new Set<FastifyReply['raw']>();
  app.addHook('preClose', async () => {
    for (const raw of streams) raw.end();
  });

  // Each service route names the policy right it needs (registryRead, registryWrite, serviceConnect);
  // device routes (device-http.ts) take the SAS token of the device in their path.
  app.addHook('onRequest', async (request) => {
    const path = request.url.split('?')[0];
    if (path === '/health' || path === '/ready' || path === WEBSOCKET_PATH) return;
    const config = request.routeOptions.config as { right?: Right; device?: boolean };
    try {
      if (config.device) {
        const token = request.headers.authorization;
        const certificate = token === undefined ? presentedChain(request.raw.socket) : undefined;
        await hub.authenticateDeviceRequest(identityOf(request.params as IdParams), { token, certificate });
      } else await hub.authenticateService(request.headers.authorization, config.right);
    } catch (err) {
      if (err instanceof ServiceRefused) logger.info({ method: request.method, path: path?.slice(0, 200), reason: err.reason }, 'call refused');
      throw err;
    }
  });
  const registryRead = { config: { right: 'registryRead' } };
  const registryWrite = { config: { right: 'registryWrite' } };
  const serviceConnect = { config: { right: 'serviceConnect' } };

  // ---- devices and modules ----
  const sendIdentity = async (reply: FastifyReply, key: string) => {
    const record = await hub.identity(key);
    return reply.header('etag', `"${record.etag}"`).send(await hub.describe(record));
  };
  // The service SDK lists with a trailing slash (`GET /devices/`), curl users without.
  for (const path of ['/devices', '/devices/']) {
    app.get(path, registryRead, async (request) => hub.listDevices(integerQuery((request.query as Record<string, unknown>).top, 'top', 1000, 1000)));
  }
  app.post('/devices/query', registryRead, async (request, reply) => {
    const pageSize = integerQuery(header(request, 'x-ms-max-item-count'), 'x-ms-max-item-count', 100, 1000) || 100;
    const page = await hub.queryDevices((request.body as { query?: unknown } | undefined)?.query, pageSize, header(request, 'x-ms-continuation'));
    if (page.continuation) reply.header('x-ms-continuation', page.continuation);
    return reply.send(page.items);
  });
  app.get('/statistics/devices', registryRead, async () => hub.registryStatistics());
  app.get('/statistics/service', serviceConnect, async () => hub.serviceStatistics());
  app.get<{ Params: IdParams }>('/devices/:id/modules', registryRead, async (request) => {
    return hub.listModules(identityOf(request.params).deviceId);
  });
  for (const path of ['/devices/:id', '/devices/:id/modules/:mid']) {
    app.put<{ Params: IdParams }>(path, registryWrite, async (request, reply) => {
      const record = await hub.putIdentity(identityOf(request.params), request.body, ifMatch(request));
      return reply.header('etag', `"${record.etag}"`).send(await hub.describe(record));
    });
    app.get<{ Params: IdParams }>(path, registryRead, async (request, reply) => sendIdentity(reply, identityKey(identityOf(request.params))));
    app.delete<{ Params: IdParams }>(path, registryWrite, async (request, reply) => {
      await hub.deleteIdentity(identityKey(identityOf(request.params)), ifMatch(request));
      return reply.code(204).send();
    });
    app.post<{ Params: IdParams }>(`${path}/regenerateKey`, registryWrite, async (request, reply) => {
      const body = request.body as { key?: unknown } | undefined;
      const record = await hub.regenerateIdentityKey(identityKey(identityOf(request.params)), body?.key ?? 'primary');
      return reply.header('etag', `"${record.etag}"`).send(await hub.describe(record));
    });
  }

  // ---- CA certificates for X.509 devices (the real hub's certificates API, here on the hub's own host) ----
  type NameParams = { name: string };
  const sendCertificate = (reply: FastifyReply, view: { etag: string }) => reply.header('etag', `"${view.etag}"`).send(view);
  app.get('/certificates', registryRead, async () => hub.listCaCertificates());
  app.get<{ Params: NameParams }>('/certificates/:name', registryRead, async (request, reply) =>
    sendCertificate(reply, await hub.caCertificate(request.params.name)),
  );
  app.put<{ Params: NameParams }>('/certificates/:name', registryWrite, async (request, reply) =>
    sendCertificate(reply, await hub.putCaCertificate(request.params.name, request.body, ifMatch(request))),
  );
  app.delete<{ Params: NameParams }>('/certificates/:name', registryWrite, async (request, reply) => {
    await hub.deleteCaCertificate(request.params.name, ifMatch(request));
    return reply.code(200).send();
  });
  app.post<{ Params: NameParams }>('/certificates/:name/generateVerificationCode', registryWrite, async (request, reply) =>
    sendCertificate(reply, await hub.generateVerificationCode(request.params.name, ifMatch(request))),
  );
  app.post<{ Params: NameParams }>('/certificates/:name/verify', registryWrite, async (request, reply) =>
    sendCertificate(reply, await hub.verifyCaCertificate(request.params.name, request.body, ifMatch(request))),
  );

  // ---- twins and direct methods ----
  for (const path of ['/twins/:id', '/twins/:id/modules/:mid']) {
    app.get<{ Params: IdParams }>(path, serviceConnect, async (request, reply) => {
      const twin = await hub.serviceTwin(identityKey(identityOf(request.params)));
      return reply.header('etag', `"${twin.etag}"`).send(twin);
    });
    for (const method of ['PATCH', 'PUT'] as const) {
      app.route<{ Params: IdParams }>({
        method,
        url: path,
        ...serviceConnect,
        handler: async (request, reply) => {
          const twin = await hub.updateServiceTwin(identityKey(identityOf(request.params)), request.body, ifMatch(request), method === 'PUT');
          return reply.header('etag', `"${twin.etag}"`).send(twin);
        },
      });
    }
    app.post<{ Params: IdParams }>(`${path}/methods`, serviceConnect, async (request) =>
      hub.invokeMethod(identityKey(identityOf(request.params)), request.body),
    );
  }

  // ---- cloud-to-device and telemetry (ours) ----
  app.post<{ Params: IdParams }>('/devices/:id/messages/devicebound', serviceConnect, async (request, reply) => {
    const sent = await hub.sendC2d(identityOf(request.params).deviceId, request.body);
    return reply.code(201).send(sent);
  });
  app.get('/messages/events', serviceConnect, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const since = integerQuery(query.since, 'since', 0, Number.MAX_SAFE_INTEGER);
    const limit = integerQuery(query.limit, 'limit', 1000, 10000);
    const deviceId = query.deviceId === undefined ? undefined : validateId(query.deviceId, 'deviceId');
    const wantsStream = String(request.headers.accept ?? '').includes('text/event-stream');
    if (!wantsStream) {
      const messages = hub.telemetry.since(since, limit, deviceId);
      return { messages, lastSeq: hub.telemetry.lastSeq };
    }
    // Server-Sent Events: what is already logged after `since`, then every new message.
    reply.hijack();
    const raw = reply.raw;
    streams.add(raw);
    raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const write = (m: TelemetryMessage) => {
      if (deviceId === undefined || m.deviceId === deviceId) raw.write(`id: ${m.seq}\nevent: telemetry\ndata: ${JSON.stringify(m)}\n\n`);
    };
    const unfollow = hub.telemetry.follow(write);
    if (query.since !== undefined) for (const m of hub.telemetry.since(since, 10000, deviceId)) write(m);
    raw.write(': following\n\n');
    const heartbeat = setInterval(() => raw.write(': keep-alive\n\n'), SSE_HEARTBEAT_MS);
    request.raw.on('close', () => {
      clearInterval(heartbeat);
      unfollow();
      streams.delete(raw);
    });
    return reply;
  });

  registerDeviceApi(app, hub, (request) => identityOf(request.params as IdParams));

  // The devices' WebSocket path takes upgrades only (../websocket.ts).
  app.all(WEBSOCKET_PATH, async (_request, reply) => reply.code(426).header('upgrade', 'websocket').header('connection', 'Upgrade').send());

  app.setNotFoundHandler(async (request, reply) =>
    reply.code(404).send({ Message: `ErrorCode:NotFound;no route for ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}`, ExceptionMessage: '' }),
  );
  installErrorHandler(app, { toWire: toWireError, logger });

  const url = await listen(app, { host: options.host, port: options.port, component: 'hub', portKey: 'restPort' });
  return { url, app };
}
