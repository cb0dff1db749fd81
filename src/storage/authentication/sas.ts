/**
 * Shared access signatures signed with an account key: service SAS (a container or
 * one blob) and account SAS (the blob service), of every signed version the service
 * accepts (sas-string-to-sign.ts), as the storage SDK's generateSasUrl and
 * generateAccountSasUrl make them. offcloud
 * keeps no stored access policies and issues no user delegation keys, so SAS that
 * name either are refused. A service SAS's response-header overrides (rscc, rscd, rsce,
 * rscl, rsct) are part of what it signs, and replace those headers of the blob it reads.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { isIPv4 } from 'node:net';
import { errors } from '../errors.ts';
import type { StorageAccount } from '../persistence/accounts.ts';
import { isWellFormedVersion } from './versions.ts';
import { accountSasStringToSign, canonicalSasResource, RESPONSE_HEADER_FIELDS, serviceSasStringToSign } from './sas-string-to-sign.ts';

export interface SasRequest {
  query: URLSearchParams;
  secure: boolean;
  /** The caller's address, for `sip`. */
  ip: string;
  account: StorageAccount;
  container: string | undefined;
  blob: string | undefined;
}

/** What a verified SAS grants: its permission letters and the response headers it sets. */
export interface SasGrant {
  permissions: string;
  /** Header name → value, from a service SAS's rscc…rsct. */
  responseHeaders: Record<string, string>;
}

/** The query parameters of a service SAS that override a read blob's response headers. */
const RESPONSE_HEADER_OVERRIDES = {
  rscc: 'cache-control',
  rscd: 'content-disposition',
  rsce: 'content-encoding',
  rscl: 'content-language',
  rsct: 'content-type',
} as const satisfies Record<(typeof RESPONSE_HEADER_FIELDS)[number], string>;

export function isSasRequest(query: URLSearchParams): boolean {
  return query.has('sig');
}

function ipv4Number(ip: string): number {
  return ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

/** `sip` is one IPv4 address or a range `from-to`. */
function ipAllowed(ip: string, range: string): boolean {
  const address = ip.replace(/^::ffff:/, '');
  const [from = '', to = from] = range.split('-');
  if (!isIPv4(address) || !isIPv4(from) || !isIPv4(to)) return false;
  const n = ipv4Number(address);
  return n >= ipv4Number(from) && n <= ipv4Number(to);
}

function signatureMatches(account: StorageAccount, stringToSign: string, signature: string): boolean {
  const given = Buffer.from(signature, 'base64');
  return account.keys.some((key) => {
    const expected = createHmac('sha256', Buffer.from(key, 'base64')).update(stringToSign, 'utf8').digest();
    return expected.length === given.length && timingSafeEqual(expected, given);
  });
}

/** The level a request addresses, as an account SAS's `srt` letters name it. */
function resourceType(request: SasRequest): 's' | 'c' | 'o' {
  if (request.blob !== undefined) return 'o';
  return request.container !== undefined ? 'c' : 's';
}

/** Checks a SAS request and returns what it grants. */
export function verifySas(request: SasRequest, now = Date.now()): SasGrant {
  const q = (name: string) => request.query.get(name) ?? '';
  const version = q('sv');
  // A SAS without `sv` is the 2009-09-19 form; one with it names a service version.
  if (request.query.has('sv') && !isWellFormedVersion(version)) {
    throw errors.authenticationFailed(`Signed version '${version}' is not a service version (YYYY-MM-DD).`);
  }
  if (q('si') || q('skoid')) throw errors.authenticationFailed('Stored access policies and user delegation keys are not supported.');
  const isAccountSas = request.query.has('ss') || request.query.has('srt');
  let stringToSign: string;
  if (isAccountSas) {
    stringToSign = accountSasStringToSign(q, request.account.name);
  } else {
    const resource = q('sr');
    if ((resource === 'c' && request.container === undefined) || (resource === 'b' && request.blob === undefined) || (resource !== 'c' && resource !== 'b')) {
      throw errors.resourceTypeMismatch();
    }
    const canonical = canonicalSasResource(version, request.account.name, request.container!, resource === 'b' ? request.blob : undefined);
    stringToSign = serviceSasStringToSign(q, canonical, '');
  }
  if (!signatureMatches(request.account, stringToSign, q('sig'))) {
    throw errors.authenticationFailed(`Signature did not match. String to sign used was ${stringToSign}`);
  }
  const start = q('st') ? Date.parse(q('st')) : -Infinity;
  const expiry = Date.parse(q('se'));
  if (Number.isNaN(start) || Number.isNaN(expiry) || now < start || now > expiry) {
    throw errors.authenticationFailed(
      `Signature not valid in the specified time frame: Start [${q('st')}] - Expiry [${q('se')}] - Current [${new Date(now).toUTCString()}]`,
    );
  }
  if (q('spr') === 'https' && !request.secure) throw errors.protocolMismatch();
  if (q('sip') && !ipAllowed(request.ip, q('sip'))) throw errors.sourceIpMismatch(request.ip);
  if (isAccountSas) {
    if (!q('ss').includes('b')) throw errors.serviceMismatch();
    if (!q('srt').includes(resourceType(request))) throw errors.resourceTypeMismatch();
  }
  // An account SAS does not sign overrides, so it sets none.
  const overrides = isAccountSas ? [] : RESPONSE_HEADER_FIELDS.filter((parameter) => q(parameter));
  return { permissions: q('sp'), responseHeaders: Object.fromEntries(overrides.map((parameter) => [RESPONSE_HEADER_OVERRIDES[parameter], q(parameter)])) };
}
