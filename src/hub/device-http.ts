/**
 * The device side of the hub over HTTPS, as the device SDKs' HTTP transport
 * speaks it: telemetry one message or a batch at a time, cloud-to-device
 * messages received by polling and settled by lock token (complete, reject,
 * abandon), and file upload (a SAS URI into the hub's storage, then the
 * upload's outcome). Each route authenticates the device in its path by the SAS token
 * in `Authorization` (rest.ts's hook); the work is the domain's, as for MQTT.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';
import type { DeviceHub } from './domain/hub.ts';
import { invalidArgument, HubError } from './domain/errors.ts';
import { MAX_TELEMETRY_BYTES, type C2dMessage, type PropertyBag } from './domain/messages.ts';
import type { Identity } from './domain/registry.ts';

/** `iothub-…` headers and the system property each carries (both directions). */
const SYSTEM_HEADERS: Record<string, string> = {
  'iothub-messageid': 'messageId',
  'iothub-correlationid': 'correlationId',
  'iothub-userid': 'userId',
  'iothub-contenttype': 'contentType',
  'iothub-contentencoding': 'contentEncoding',
  'iothub-interface-id': 'interfaceId',
  'iothub-to': 'to',
  'iothub-expiry': 'expiryTimeUtc',
  'dt-subject': 'dtSubject',
};
const HEADER_OF = Object.fromEntries(Object.entries(SYSTEM_HEADERS).map(([header, name]) => [name, header]));
const APP_PREFIX = 'iothub-app-';
const BATCH_TYPE = 'application/vnd.microsoft.iothub.json';

/** The property bag of a message sent as headers (single send) or as a batch item's `properties`. */
function bagOf(fields: Record<string, unknown>): PropertyBag {
  const bag: PropertyBag = { system: {}, properties: {} };
  for (const [name, value] of Object.entries(fields)) {
    if (typeof value !== 'string') continue;
    const lower = name.toLowerCase();
    const system = SYSTEM_HEADERS[lower];
    // The SDK sends `iothub-to` as the path it posts to: not a property of the message.
    if (system && lower !== 'iothub-to') bag.system[system] = value;
    else if (lower.startsWith(APP_PREFIX) && lower.length > APP_PREFIX.length) bag.properties[name.slice(APP_PREFIX.length)] = value;
  }
  return bag;
}

function headerBytes(headers: IncomingHttpHeaders): number {
  return Object.entries(headers).reduce((sum, [name, value]) => sum + (name.startsWith('iothub-') ? name.length + String(value).length : 0), 0);
}

interface BatchItem {
  body: Buffer;
  bag: PropertyBag;
}

function parseBatch(raw: Buffer): BatchItem[] {
  let items: unknown;
  try {
    items = JSON.parse(raw.toString('utf8'));
  } catch {
    throw invalidArgument('a batch must be a JSON array of {"body": <base64>, "properties": {…}}');
  }
  if (!Array.isArray(items)) throw invalidArgument('a batch must be a JSON array');
  const batch = items.map((item: unknown, i) => {
    const { body, properties } = (typeof item === 'object' && item !== null ? item : {}) as { body?: unknown; properties?: unknown };
    if (typeof body !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(body)) throw invalidArgument(`batch item ${i}: body must be base64`);
    const fields = typeof properties === 'object' && properties !== null && !Array.isArray(properties) ? (properties as Record<string, unknown>) : {};
    return { body: Buffer.from(body, 'base64'), bag: bagOf(fields) };
  });
  const total = batch.reduce((sum, item) => sum + item.body.length, 0);
  if (total > MAX_TELEMETRY_BYTES) throw new HubError('MessageTooLarge', `the batch is ${total} bytes; the limit is ${MAX_TELEMETRY_BYTES}`);
  return batch;
}

/** A header value as Node may send it: visible ASCII as is, anything else percent-encoded. */
function headerValue(value: string): string {
  return /^[\x20-\x7e]*$/.test(value) ? value : encodeURIComponent(value);
}

function c2dHeaders(message: C2dMessage, lockToken: string): Record<string, string> {
  const headers: Record<string, string> = {
    etag: `"${lockToken}"`,
    'iothub-enqueuedtime': message.enqueuedTimeUtc,
    'content-type': 'application/octet-stream',
  };
  for (const [name, value] of Object.entries(message.system)) {
    const header = HEADER_OF[name];
    if (header) headers[header] = headerValue(value);
  }
  for (const [name, value] of Object.entries(message.properties)) {
    // The ack request travels as its own header; every other property with the app prefix.
    headers[name === 'iothub-ack' ? name : `${APP_PREFIX}${name}`] = headerValue(value);
  }
  return headers;
}

/** The device routes; `identityOf` reads (and checks) the device or module of the path. */
export function registerDeviceApi(app: FastifyInstance, hub: DeviceHub, identityOf: (request: FastifyRequest) => Identity): void {
  const device = { config: { device: true } };

  app.register(async (scope) => {
    // Telemetry bodies are the message's bytes whatever their content type.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    for (const path of ['/devices/:id/messages/events', '/devices/:id/modules/:mid/messages/events']) {
      scope.post(path, device, async (request, reply) => {
        const identity = identityOf(request);
        const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        if (String(request.headers['content-type'] ?? '').startsWith(BATCH_TYPE)) {
          for (const item of parseBatch(body)) await hub.recordTelemetry(identity, item.bag, item.body, 0);
        } else {
          await hub.recordTelemetry(identity, bagOf(request.headers as Record<string, unknown>), body, headerBytes(request.headers));
        }
        return reply.code(204).send();
      });
    }
  });

  app.get('/devices/:id/messages/devicebound', device, async (request, reply) => {
    const received = await hub.receiveC2d(identityOf(request).deviceId);
    if (!received) return reply.code(204).send();
    return reply.headers(c2dHeaders(received.message, received.lockToken)).send(Buffer.from(received.message.payload, 'base64'));
  });
  app.delete<{ Params: { lockToken: string } }>('/devices/:id/messages/devicebound/:lockToken', device, async (request, reply) => {
    const reject = Object.hasOwn(request.query as object, 'reject');
    await hub.settleC2d(identityOf(request).deviceId, request.params.lockToken, reject ? 'reject' : 'complete');
    return reply.code(204).send();
  });
  app.post<{ Params: { lockToken: string } }>('/devices/:id/messages/devicebound/:lockToken/abandon', device, async (request, reply) => {
    await hub.settleC2d(identityOf(request).deviceId, request.params.lockToken, 'abandon');
    return reply.code(204).send();
  });

  // File upload: a SAS URI for one blob, then the device's word on how its upload went (the correlation id
  // in the body, as the REST reference has it, or in the path, as the Node and C SDKs send it).
  app.post('/devices/:id/files', device, async (request) => hub.startFileUpload(identityOf(request).deviceId, request.body));
  for (const path of ['/devices/:id/files/notifications', '/devices/:id/files/notifications/:correlationId']) {
    app.post<{ Params: { correlationId?: string } }>(path, device, async (request, reply) => {
      await hub.completeFileUpload(identityOf(request).deviceId, request.params.correlationId, request.body);
      return reply.code(204).send();
    });
  }
}
