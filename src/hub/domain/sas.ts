/**
 * Shared access signatures (§5): `SharedAccessSignature sr=<resource>&sig=<hmac>&se=<expiry>[&skn=<policy>]`,
 * where sig = base64(HMAC-SHA256(base64decode(key), sr + "\n" + se)) over the
 * URL-encoded `sr` exactly as it appears in the token.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export interface SasToken {
  /** `sr` as sent (URL-encoded): the string that was signed. */
  rawResource: string;
  /** `sr` decoded and lower-cased, for comparing with a resource. */
  resource: string;
  signature: string;
  expiry: number;
  keyName?: string;
}

/** encodeURIComponent that also escapes !'()*, as the vendor SDKs do. */
export function encodeUriComponentStrict(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export function generateKey(): string {
  return randomBytes(32).toString('base64');
}

function hmac(key: string, rawResource: string, expiry: number): Buffer {
  return createHmac('sha256', Buffer.from(key, 'base64')).update(`${rawResource}\n${expiry}`).digest();
}

/** Makes a token for a resource (`host/devices/d1`, or the hub host for a policy). */
export function createSasToken(resource: string, key: string, expiry: number, keyName?: string): string {
  const sr = encodeUriComponentStrict(resource);
  const sig = encodeUriComponentStrict(hmac(key, sr, expiry).toString('base64'));
  return `SharedAccessSignature sr=${sr}&sig=${sig}${keyName ? `&skn=${encodeUriComponentStrict(keyName)}` : ''}&se=${expiry}`;
}

function decode(value: string): string | undefined {
  try {
    return decodeURIComponent(value);
  } catch {
    return undefined;
  }
}

/** Parses a token; undefined when it is not one (missing fields, broken encoding). */
export function parseSasToken(text: string): SasToken | undefined {
  const match = /^SharedAccessSignature\s+(.+)$/s.exec(text.trim());
  if (!match) return undefined;
  const fields = new Map<string, string>();
  for (const pair of match[1]!.split('&')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) return undefined;
    fields.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  const rawResource = fields.get('sr');
  const resource = rawResource === undefined ? undefined : decode(rawResource);
  const signature = decode(fields.get('sig') ?? '');
  const expiryText = fields.get('se') ?? '';
  const keyName = fields.has('skn') ? decode(fields.get('skn')!) : undefined;
  if (rawResource === undefined || resource === undefined || !signature || !/^\d{1,12}$/.test(expiryText)) return undefined;
  if (fields.has('skn') && keyName === undefined) return undefined;
  return { rawResource, resource: resource.toLowerCase(), signature, expiry: Number(expiryText), ...(keyName ? { keyName } : {}) };
}

/** True when the token was signed with this key (constant-time compare). */
export function signedWith(token: SasToken, key: string): boolean {
  const expected = hmac(key, token.rawResource, token.expiry);
  const given = Buffer.from(token.signature, 'base64');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Drops a `:port` from a host name: the SDK puts `HostName=localhost:8883` into `sr` as is. */
export function hostWithoutPort(host: string): string {
  return host.replace(/:\d+$/, '').toLowerCase();
}

/**
 * Whether the token's resource grants access to `target` (`host/devices/d1`):
 * equal, a prefix of it on a path boundary, or the target plus a trailing path
 * (the real hub accepts `…/devices/d1/api-version=2016-11-14`). Hosts compare without port.
 */
export function resourceCovers(tokenResource: string, target: string): boolean {
  const normalise = (r: string) => {
    const slash = r.indexOf('/');
    return slash < 0 ? hostWithoutPort(r) : hostWithoutPort(r.slice(0, slash)) + r.slice(slash).toLowerCase().replace(/\/+$/, '');
  };
  const granted = normalise(tokenResource);
  const wanted = normalise(target);
  return granted === wanted || wanted.startsWith(`${granted}/`) || granted.startsWith(`${wanted}/`);
}

export function isExpired(token: SasToken, nowMs = Date.now()): boolean {
  return token.expiry * 1000 <= nowMs;
}
