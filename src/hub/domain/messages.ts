/**
 * Device-to-cloud telemetry and cloud-to-device messages: the property bag
 * that travels in the topic (`$.mid=…&$.cid=…&key=value`), the bounded
 * telemetry log the cloud side reads and follows, and C2D message records.
 */
import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import { invalidArgument, HubError } from './errors.ts';
import { encodeUriComponentStrict } from './sas.ts';

/** System property keys of the bag and their names in our JSON. */
const SYSTEM_PROPERTIES: Record<string, string> = {
  '$.mid': 'messageId',
  '$.cid': 'correlationId',
  '$.uid': 'userId',
  '$.to': 'to',
  '$.ct': 'contentType',
  '$.ce': 'contentEncoding',
  '$.ifid': 'interfaceId',
  '$.exp': 'expiryTimeUtc',
  '$.on': 'outputName',
  '$.sub': 'dtSubject',
};
const BAG_KEY_OF = Object.fromEntries(Object.entries(SYSTEM_PROPERTIES).map(([bag, name]) => [name, bag]));

/** Real-hub limits: a device-to-cloud message up to 256 KB, a C2D message up to 64 KB, 50 pending. */
export const MAX_TELEMETRY_BYTES = 256 * 1024;
export const MAX_C2D_BYTES = 64 * 1024;
export const MAX_PENDING_C2D = 50;

export function queueFull(deviceId: string): HubError {
  return new HubError('DeviceMaximumQueueDepthExceeded', `device ${deviceId} already has ${MAX_PENDING_C2D} pending cloud-to-device messages`);
}

export interface PropertyBag {
  system: Record<string, string>;
  properties: Record<string, string>;
}

function decodeComponent(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw invalidArgument('the property bag has a broken percent-encoding');
  }
}

/** Decodes keys and values; `$` may arrive as `%24`, a key without `=` has an empty value. */
export function parsePropertyBag(bag: string): PropertyBag {
  const out: PropertyBag = { system: {}, properties: {} };
  for (const pair of bag.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const key = decodeComponent(eq < 0 ? pair : pair.slice(0, eq));
    const value = eq < 0 ? '' : decodeComponent(pair.slice(eq + 1));
    const systemName = SYSTEM_PROPERTIES[key];
    if (systemName) out.system[systemName] = value;
    else if (key.startsWith('$.')) out.system[key.slice(2)] = value;
    else out.properties[key] = value;
  }
  return out;
}

export function encodePropertyBag(bag: PropertyBag): string {
  const pairs = [...Object.entries(bag.system).map(([name, value]) => [BAG_KEY_OF[name] ?? `$.${name}`, value] as const), ...Object.entries(bag.properties)];
  return pairs.map(([key, value]) => `${encodeUriComponentStrict(key)}=${encodeUriComponentStrict(value)}`).join('&');
}

export interface MessageBody {
  body: string;
  bodyEncoding: 'utf8' | 'base64';
}

export function describeBody(payload: Buffer): MessageBody {
  return isUtf8(payload) ? { body: payload.toString('utf8'), bodyEncoding: 'utf8' } : { body: payload.toString('base64'), bodyEncoding: 'base64' };
}

let formattedAt = -1;
let formatted = '';
/** The time now in ISO 8601, formatted once per millisecond: toISOString costs 1–2 µs, and telemetry asks once per message. */
export function isoNow(): string {
  const now = Date.now();
  if (now !== formattedAt) {
    formattedAt = now;
    formatted = new Date(now).toISOString();
  }
  return formatted;
}

export interface TelemetryMessage extends PropertyBag, MessageBody {
  /** Position in this replica's log; `GET /messages/events?since=` resumes after it. */
  seq: number;
  deviceId: string;
  moduleId?: string;
  enqueuedTimeUtc: string;
}

export type TelemetryListener = (message: TelemetryMessage) => void;

/** The last N telemetry messages, readable by position and followable live. */
export class TelemetryLog {
  /** A ring: message `seq` sits at `(seq - 1) % capacity` while it is among the last `capacity`. */
  private readonly ring: (TelemetryMessage | undefined)[];
  private nextSeq = 1;
  private readonly listeners = new Set<TelemetryListener>();

  constructor(private readonly capacity: number) {
    this.ring = new Array<TelemetryMessage | undefined>(capacity);
  }

  append(message: Omit<TelemetryMessage, 'seq'>): TelemetryMessage {
    // Field by field, in the order the readers' JSON shows them (a module's id only when there is one).
    const entry: TelemetryMessage = {
      seq: this.nextSeq++,
      deviceId: message.deviceId,
      moduleId: message.moduleId,
      enqueuedTimeUtc: message.enqueuedTimeUtc,
      system: message.system,
      properties: message.properties,
      body: message.body,
      bodyEncoding: message.bodyEncoding,
    };
    this.ring[(entry.seq - 1) % this.capacity] = entry;
    for (const listener of this.listeners) listener(entry);
    return entry;
  }

  /** Messages after `seq` that are still kept, oldest first. */
  since(seq: number, limit: number, deviceId?: string): TelemetryMessage[] {
    const out: TelemetryMessage[] = [];
    for (let s = Math.max(seq + 1, this.nextSeq - this.capacity); s < this.nextSeq && out.length < limit; s++) {
      const entry = this.ring[(s - 1) % this.capacity]!;
      if (deviceId === undefined || entry.deviceId === deviceId) out.push(entry);
    }
    return out;
  }

  get lastSeq(): number {
    return this.nextSeq - 1;
  }

  follow(listener: TelemetryListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

export interface C2dMessage extends PropertyBag {
  /** Our id for the queue entry (the lock token of the real hub). */
  id: string;
  payload: string;
  enqueuedTimeUtc: string;
  /** Milliseconds since the epoch after which the message is dead-lettered undelivered. */
  expiresAt: number;
  /** How many times it was handed to the device (absent: never). */
  deliveryCount?: number;
}

/** A C2D message taken out of its device's queue without being completed or rejected, and why (its feedback status). */
export interface DeadC2d {
  message: C2dMessage;
  reason: 'Expired' | 'DeliveryCountExceeded';
}

/** Pending messages that may still be delivered at `now`. */
export function liveC2d(messages: C2dMessage[], now: number): C2dMessage[] {
  return messages.filter((m) => m.expiresAt > now);
}

/** Takes the expired messages out of a queue: what stays, and what is dead. */
export function expireC2d(messages: C2dMessage[], now: number): { messages: C2dMessage[]; dead: DeadC2d[] } {
  const dead = messages.filter((m) => m.expiresAt <= now).map((message) => ({ message, reason: 'Expired' as const }));
  return { messages: dead.length ? liveC2d(messages, now) : messages, dead };
}

/**
 * A delivery from a device's queue: expired messages and those delivered `maxDeliveries` times
 * already are taken out (dead); the oldest of the rest has its delivery counted and is handed out.
 */
export function claimC2d(
  queue: C2dMessage[],
  now: number,
  maxDeliveries: number,
): { messages: C2dMessage[]; message: C2dMessage | undefined; dead: DeadC2d[] } {
  const { messages: live, dead } = expireC2d(queue, now);
  const messages: C2dMessage[] = [];
  let message: C2dMessage | undefined;
  for (const m of live) {
    if (message) messages.push(m);
    else if ((m.deliveryCount ?? 0) >= maxDeliveries) dead.push({ message: m, reason: 'DeliveryCountExceeded' });
    else messages.push((message = { ...m, deliveryCount: (m.deliveryCount ?? 0) + 1 }));
  }
  return { messages, message, dead };
}

export interface C2dRequest {
  body?: unknown;
  bodyEncoding?: unknown;
  messageId?: unknown;
  correlationId?: unknown;
  userId?: unknown;
  contentType?: unknown;
  contentEncoding?: unknown;
  ack?: unknown;
  ttlSeconds?: unknown;
  properties?: unknown;
}

function optionalString(value: unknown, name: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value.length > 128) throw invalidArgument(`${name} must be a string of up to 128 characters`);
  return value;
}

/** Builds a queue entry from the REST body of `POST /devices/{id}/messages/devicebound`. */
export function createC2dMessage(deviceId: string, request: unknown, defaultTtlSeconds: number, now = Date.now()): C2dMessage {
  if (typeof request !== 'object' || request === null || Array.isArray(request)) throw invalidArgument('the body must be a JSON object');
  const r = request as C2dRequest;
  if (typeof r.body !== 'string') throw invalidArgument('body must be a string');
  if (r.bodyEncoding !== undefined && r.bodyEncoding !== 'utf8' && r.bodyEncoding !== 'base64')
    throw invalidArgument('bodyEncoding must be "utf8" or "base64"');
  const payload = Buffer.from(r.body, r.bodyEncoding === 'base64' ? 'base64' : 'utf8');
  const properties: Record<string, string> = {};
  if (r.properties !== undefined && r.properties !== null) {
    if (typeof r.properties !== 'object' || Array.isArray(r.properties)) throw invalidArgument('properties must be an object of strings');
    for (const [key, value] of Object.entries(r.properties)) {
      if (typeof value !== 'string' || key === '' || key.startsWith('$'))
        throw invalidArgument(`property ${JSON.stringify(key.slice(0, 64))} must be a string with a name not starting with $`);
      properties[key] = value;
    }
  }
  const ack = optionalString(r.ack, 'ack');
  if (ack !== undefined && !['none', 'positive', 'negative', 'full'].includes(ack)) throw invalidArgument('ack must be none, positive, negative or full');
  if (ack) properties['iothub-ack'] = ack;
  const ttl = r.ttlSeconds ?? defaultTtlSeconds;
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1 || ttl > 172800) throw invalidArgument('ttlSeconds must be an integer from 1 to 172800');
  const system: Record<string, string> = {
    messageId: optionalString(r.messageId, 'messageId') ?? randomUUID(),
    to: `/devices/${deviceId}/messages/devicebound`,
  };
  for (const name of ['correlationId', 'userId', 'contentType', 'contentEncoding'] as const) {
    const value = optionalString(r[name], name);
    if (value !== undefined) system[name] = value;
  }
  const size = payload.length + Buffer.byteLength(encodePropertyBag({ system, properties }));
  if (size > MAX_C2D_BYTES) throw new HubError('MessageTooLarge', `the message is ${size} bytes; the limit is ${MAX_C2D_BYTES}`);
  return {
    id: randomUUID(),
    system: { ...system, expiryTimeUtc: new Date(now + ttl * 1000).toISOString() },
    properties,
    payload: payload.toString('base64'),
    enqueuedTimeUtc: new Date(now).toISOString(),
    expiresAt: now + ttl * 1000,
  };
}
