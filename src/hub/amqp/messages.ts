/**
 * AMQP 1.0 messages (as rhea decodes and encodes them) and the hub's own
 * message shapes: a telemetry property bag from a device's message, a C2D
 * message as the service sends it and as a device receives it.
 */
import rhea, { type Message } from 'rhea';
import type { C2dMessage, PropertyBag } from '../domain/messages.ts';

/** Message and correlation ids: a 16-byte uuid the SDKs encode as such, or a string. */
export function idText(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (Buffer.isBuffer(value)) return value.length === 16 ? rhea.uuid_to_string(value) : value.toString('utf8');
  return String(value);
}

/** The bytes of a body: a data section (what the SDKs send), a string, or any other value as JSON. */
export function bodyBytes(body: unknown): Buffer {
  if (body === undefined || body === null) return Buffer.alloc(0);
  if (Buffer.isBuffer(body)) return body;
  const section = body as { typecode?: number; content?: unknown };
  if (section.typecode === 0x75 && section.content !== undefined) return Buffer.from(section.content as Buffer);
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  return Buffer.from(JSON.stringify(body), 'utf8');
}

function text(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  return Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
}

/** A device's telemetry message as the property bag the hub records. */
export function telemetryBag(message: Message): PropertyBag {
  const bag: PropertyBag = { system: {}, properties: {} };
  const system: [string, unknown][] = [
    ['messageId', idText(message.message_id)],
    ['correlationId', idText(message.correlation_id)],
    ['userId', message.user_id === undefined ? undefined : text(message.user_id)],
    ['contentType', message.content_type],
    ['contentEncoding', message.content_encoding],
    ['expiryTimeUtc', message.absolute_expiry_time],
  ];
  const annotations = (message.message_annotations ?? {}) as Record<string, unknown>;
  system.push(['interfaceId', annotations['iothub-interface-id']], ['dtSubject', annotations['dt-subject']]);
  const properties = (message.application_properties ?? {}) as Record<string, unknown>;
  system.push(['outputName', properties['iothub-outputname']]);
  for (const [name, value] of system) if (value !== undefined && value !== null) bag.system[name] = text(value);
  for (const [name, value] of Object.entries(properties)) {
    if (name !== 'iothub-outputname' && value !== undefined && value !== null) bag.properties[name] = text(value);
  }
  return bag;
}

/** A service's C2D message in the shape of the hub's C2D request (what the REST send takes). */
export function c2dRequest(message: Message): Record<string, unknown> {
  const properties = { ...((message.application_properties ?? {}) as Record<string, unknown>) };
  const ack = properties['iothub-ack'];
  delete properties['iothub-ack'];
  const expiry = message.absolute_expiry_time instanceof Date ? message.absolute_expiry_time.getTime() : undefined;
  return {
    body: bodyBytes(message.body).toString('base64'),
    bodyEncoding: 'base64',
    messageId: idText(message.message_id),
    correlationId: idText(message.correlation_id),
    userId: message.user_id === undefined ? undefined : text(message.user_id),
    contentType: message.content_type,
    contentEncoding: message.content_encoding,
    ack,
    ...(expiry === undefined ? {} : { ttlSeconds: Math.max(1, Math.round((expiry - Date.now()) / 1000)) }),
    properties: Object.fromEntries(Object.entries(properties).map(([name, value]) => [name, text(value)])),
  };
}

/** A queued C2D message as the device's receiver link gets it. */
export function c2dAmqpMessage(message: C2dMessage): Message {
  const { system } = message;
  const out: Record<string, unknown> = {
    message_id: system.messageId ?? message.id,
    to: system.to,
    body: rhea.message.data_section(Buffer.from(message.payload, 'base64')),
    application_properties: { ...message.properties },
    message_annotations: { 'iothub-enqueuedtime': new Date(message.enqueuedTimeUtc) },
  };
  if (system.correlationId !== undefined) out.correlation_id = system.correlationId;
  if (system.userId !== undefined) out.user_id = Buffer.from(system.userId, 'utf8');
  if (system.contentType !== undefined) out.content_type = system.contentType;
  if (system.contentEncoding !== undefined) out.content_encoding = system.contentEncoding;
  if (system.expiryTimeUtc !== undefined) out.absolute_expiry_time = new Date(system.expiryTimeUtc);
  return out as unknown as Message;
}

/** A JSON body in a data section (twin documents, method payloads, feedback batches). */
export function jsonSection(value: unknown): unknown {
  return rhea.message.data_section(Buffer.from(JSON.stringify(value), 'utf8'));
}
