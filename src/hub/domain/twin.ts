/**
 * Device twins (§2.8, §3): desired and reported property sections with
 * independent `$version` counters, JSON merge-patch updates (null deletes a
 * member), and the document limits of the real hub. Every check runs before
 * anything changes, so a rejected patch leaves the twin as it was.
 */
import { DEFAULT_TWIN_MAX_DEPTH } from '../defaults.ts';
import { invalidArgument } from './errors.ts';
import { newEtag } from './etag.ts';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export interface TwinSection {
  properties: JsonObject;
  /** Counts the changes of this section; a new twin starts at 1, as the real hub's do. */
  version: number;
  lastUpdated: string;
}

export interface Twin {
  tags: JsonObject;
  desired: TwinSection;
  reported: TwinSection;
  /** Counts every change of the twin (tags, desired or reported). */
  version: number;
  etag: string;
}

export interface TwinLimits {
  maxDepth: number;
  maxSectionBytes: number;
  maxTagsBytes: number;
  maxKeyBytes: number;
  maxStringBytes: number;
}

export const DEFAULT_TWIN_LIMITS: TwinLimits = {
  maxDepth: DEFAULT_TWIN_MAX_DEPTH,
  maxSectionBytes: 32 * 1024,
  maxTagsBytes: 8 * 1024,
  maxKeyBytes: 1024,
  maxStringBytes: 4 * 1024,
};

/** The integer range a twin value may hold (±2^52). */
const MIN_INTEGER = -4503599627370496;
const MAX_INTEGER = 4503599627370495;
// eslint-disable-next-line no-control-regex
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/;

export function newTwin(now = new Date()): Twin {
  const lastUpdated = now.toISOString();
  return {
    tags: {},
    desired: { properties: {}, version: 1, lastUpdated },
    reported: { properties: {}, version: 1, lastUpdated },
    version: 1,
    etag: newEtag(),
  };
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Parses a patch message; anything but a JSON object is a 400. */
export function parsePatch(payload: Buffer | string): JsonObject {
  let value: unknown;
  try {
    value = JSON.parse(typeof payload === 'string' ? payload : STRICT_UTF8.decode(payload));
  } catch {
    throw invalidArgument('the patch is not valid JSON in UTF-8');
  }
  if (!isObject(value)) throw invalidArgument('the patch must be a JSON object');
  return value;
}

function checkKey(key: string, limits: TwinLimits, path: string): void {
  if (key === '' || Buffer.byteLength(key) > limits.maxKeyBytes) {
    throw invalidArgument(`property name at ${path || '/'} must be 1 to ${limits.maxKeyBytes} bytes`);
  }
  if (key.includes('.') || key.includes('$') || key.includes(' ') || CONTROL_CHARS.test(key)) {
    throw invalidArgument(`property name ${JSON.stringify(key.slice(0, 64))} must not contain '.', '$', spaces or control characters`);
  }
}

/** A value still to check, with where it sits. */
interface PendingValue {
  value: unknown;
  path: string;
  /** Inside a patch null deletes; inside an array it is refused. */
  inPatch: boolean;
  /** Objects around it (the twin's depth; arrays do not count, as in depthOf). */
  depth: number;
  /** Objects and arrays around it. */
  nesting: number;
}

function checkScalar(value: unknown, limits: TwinLimits, path: string): void {
  switch (typeof value) {
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value) || (Number.isInteger(value) && (value < MIN_INTEGER || value > MAX_INTEGER))) {
        throw invalidArgument(`number at ${path} is out of range`);
      }
      return;
    case 'string':
      if (Buffer.byteLength(value) > limits.maxStringBytes) {
        throw invalidArgument(`string at ${path} is longer than ${limits.maxStringBytes} bytes`);
      }
      return;
    default:
      throw invalidArgument(`unsupported value at ${path}`);
  }
}

/**
 * Checks names, values and depth of a patch (null members allowed: they
 * delete). A loop over a stack, not recursion: a hostile patch nested
 * thousands deep must get its 400, not overflow the call stack. Arrays do
 * not count towards the twin's depth, but nesting of any kind stops at twice
 * it, so everything after this check (merge, size, JSON.stringify) stays shallow.
 */
export function validatePatch(patch: JsonObject, limits: TwinLimits): void {
  const pending: PendingValue[] = [{ value: patch, path: '', inPatch: true, depth: 0, nesting: 0 }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const { value, path, inPatch, depth, nesting } = next;
    if (value === null) {
      if (!inPatch) throw invalidArgument(`null is not allowed inside an array (${path})`);
      continue;
    }
    if (typeof value !== 'object') {
      checkScalar(value, limits, path);
      continue;
    }
    const isArray = Array.isArray(value);
    if (!isArray && depth + 1 > limits.maxDepth) throw invalidArgument(`the patch is nested deeper than ${limits.maxDepth} levels`);
    if (nesting + 1 > 2 * limits.maxDepth) throw invalidArgument(`the patch nests arrays and objects deeper than ${2 * limits.maxDepth} levels`);
    const members: [string, unknown][] = isArray ? value.map((item, i) => [String(i), item]) : Object.entries(value);
    // Pushed last to first, so members are checked (and the first fault reported) in document order.
    for (let i = members.length - 1; i >= 0; i--) {
      const [key, member] = members[i]!;
      if (!isArray) checkKey(key, limits, path);
      pending.push({ value: member, path: `${path}/${key}`, inPatch: inPatch && !isArray, depth: isArray ? depth : depth + 1, nesting: nesting + 1 });
    }
  }
}

/** RFC 7396 merge: objects merge recursively, null deletes, everything else replaces. */
export function mergePatch(target: JsonObject, patch: JsonObject): JsonObject {
  const out: JsonObject = { ...target };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else if (isObject(value)) out[key] = mergePatch(isObject(out[key]) ? out[key] : {}, value);
    else out[key] = value;
  }
  return out;
}

export function depthOf(value: JsonValue): number {
  if (Array.isArray(value)) return Math.max(0, ...value.map(depthOf));
  if (!isObject(value)) return 0;
  return 1 + Math.max(0, ...Object.values(value).map(depthOf));
}

/**
 * Size as the hub counts it: UTF-8 key lengths plus values, strings by their
 * characters without control characters, numbers 8 bytes, booleans 4.
 */
export function sizeOf(value: JsonValue): number {
  if (value === null) return 0;
  if (typeof value === 'boolean') return 4;
  if (typeof value === 'number') return 8;
  if (typeof value === 'string') return [...value].filter((c) => !CONTROL_CHARS.test(c)).length;
  if (Array.isArray(value)) return value.reduce<number>((sum, item) => sum + sizeOf(item), 0);
  return Object.entries(value).reduce((sum, [key, member]) => sum + Buffer.byteLength(key) + sizeOf(member), 0);
}

function checkSection(section: JsonObject, limits: TwinLimits, name: string, maxBytes: number): void {
  if (depthOf(section) > limits.maxDepth) throw invalidArgument(`${name} is nested deeper than ${limits.maxDepth} levels`);
  const size = sizeOf(section);
  if (size > maxBytes) throw invalidArgument(`${name} would be ${size} bytes; the limit is ${maxBytes}`);
}

function updatedSection(section: TwinSection, patch: JsonObject, limits: TwinLimits, name: string, now: Date): TwinSection {
  const properties = mergePatch(section.properties, patch);
  checkSection(properties, limits, name, limits.maxSectionBytes);
  return { properties, version: section.version + 1, lastUpdated: now.toISOString() };
}

/** A device's reported PATCH (§3): merged, version + 1. */
export function patchReportedProperties(twin: Twin, patch: JsonObject, limits: TwinLimits, now = new Date()): Twin {
  validatePatch(patch, limits);
  return { ...twin, reported: updatedSection(twin.reported, patch, limits, 'reported properties', now), version: twin.version + 1, etag: newEtag() };
}

export interface ServiceTwinUpdate {
  tags?: JsonObject;
  desired?: JsonObject;
}

/** Reads `{tags?, properties: {desired?}}` from a REST body. */
export function parseServiceTwinUpdate(body: unknown): ServiceTwinUpdate {
  if (!isObject(body)) throw invalidArgument('the body must be a JSON object');
  const out: ServiceTwinUpdate = {};
  if (body.tags !== undefined && body.tags !== null) {
    if (!isObject(body.tags)) throw invalidArgument('tags must be an object');
    out.tags = body.tags;
  }
  const properties = body.properties;
  if (properties !== undefined && properties !== null) {
    if (!isObject(properties)) throw invalidArgument('properties must be an object');
    if (properties.reported !== undefined) throw invalidArgument('reported properties are written by the device only');
    if (properties.desired !== undefined && properties.desired !== null) {
      if (!isObject(properties.desired)) throw invalidArgument('properties.desired must be an object');
      const { $version: _ignored, $metadata: _metadata, ...desired } = properties.desired;
      out.desired = desired;
    }
  }
  return out;
}

export interface DesiredChange {
  twin: Twin;
  /** What to push to the device (`$version` included), when desired changed. */
  push?: JsonObject;
}

/** A service PATCH (merge) or PUT (replace) of tags and desired properties. */
export function updateDesiredProperties(twin: Twin, update: ServiceTwinUpdate, limits: TwinLimits, replace: boolean, now = new Date()): DesiredChange {
  const next: Twin = { ...twin };
  if (update.tags) {
    validatePatch(update.tags, limits);
    next.tags = replace ? mergePatch({}, update.tags) : mergePatch(twin.tags, update.tags);
    checkSection(next.tags, limits, 'tags', limits.maxTagsBytes);
  }
  let push: JsonObject | undefined;
  if (update.desired) {
    validatePatch(update.desired, limits);
    if (replace) {
      const properties = mergePatch({}, update.desired);
      checkSection(properties, limits, 'desired properties', limits.maxSectionBytes);
      next.desired = { properties, version: twin.desired.version + 1, lastUpdated: now.toISOString() };
      // A full replace reaches the device as a patch that also deletes what is gone.
      const removed = Object.fromEntries(
        Object.keys(twin.desired.properties)
          .filter((k) => !(k in properties))
          .map((k) => [k, null]),
      );
      push = { ...removed, ...properties, $version: next.desired.version };
    } else {
      next.desired = updatedSection(twin.desired, update.desired, limits, 'desired properties', now);
      push = { ...update.desired, $version: next.desired.version };
    }
  }
  if (!update.tags && !update.desired) return { twin };
  return { twin: { ...next, version: twin.version + 1, etag: newEtag() }, ...(push ? { push } : {}) };
}

/** The twin a device GETs: `{desired, reported}` with their `$version`, no metadata. */
export function deviceTwinView(twin: Twin): { desired: JsonObject; reported: JsonObject } {
  return {
    desired: { ...twin.desired.properties, $version: twin.desired.version },
    reported: { ...twin.reported.properties, $version: twin.reported.version },
  };
}

/** What the real hub reports for activity it does not track. */
export const NEVER = '0001-01-01T00:00:00Z';

function sectionView(section: TwinSection): JsonObject {
  return { ...section.properties, $metadata: { $lastUpdated: section.lastUpdated }, $version: section.version };
}

/** The service-side twin JSON of `GET /twins/{id}`. */
export function serviceTwinView(
  record: { deviceId: string; moduleId?: string; modelId?: string; status: string; statusUpdatedTime: string; etag: string; twin: Twin },
  connected: boolean,
  pendingC2d: number,
  authentication: { type: string; x509Thumbprint: object },
) {
  const { twin } = record;
  return {
    deviceId: record.deviceId,
    ...(record.moduleId ? { moduleId: record.moduleId } : {}),
    modelId: record.modelId ?? '',
    etag: twin.etag,
    deviceEtag: record.etag,
    status: record.status,
    statusUpdateTime: record.statusUpdatedTime,
    connectionState: connected ? 'Connected' : 'Disconnected',
    lastActivityTime: NEVER,
    cloudToDeviceMessageCount: pendingC2d,
    authenticationType: authentication.type,
    x509Thumbprint: authentication.x509Thumbprint,
    version: twin.version,
    tags: twin.tags,
    properties: { desired: sectionView(twin.desired), reported: sectionView(twin.reported) },
    capabilities: { iotEdge: false },
  };
}
