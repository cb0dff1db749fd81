/**
 * Shared access signatures signed with an account key: service SAS (a container or
 * one blob) and account SAS (the blob service), signed versions 2020-12-06 and later,
 * as the storage SDK's generateSasUrl and generateAccountSasUrl make them. offcloud
 * keeps no stored access policies and issues no user delegation keys, so SAS that
 * name either are refused. A service SAS's response-header overrides (rscc, rscd, rsce,
 * rscl, rsct) are part of what it signs, and replace those headers of the blob it reads.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { isIPv4 } from 'node:net';
import { errors } from '../errors.ts';
import type { StorageAccount } from '../persistence/accounts.ts';

/** The oldest signed version whose string-to-sign this module builds. */
export const OLDEST_SAS_VERSION = '2020-12-06';

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
const RESPONSE_HEADER_OVERRIDES = [
  ['rscc', 'cache-control'],
  ['rscd', 'content-disposition'],
  ['rsce', 'content-encoding'],
  ['rscl', 'content-language'],
  ['rsct', 'content-type'],
] as const;

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
  if (!/^\d{4}-\d{2}-\d{2}$/.test(version) || version < OLDEST_SAS_VERSION) {
    throw errors.authenticationFailed(`Signed version '${version}' is not supported; sign with ${OLDEST_SAS_VERSION} or later.`);
  }
  if (q('si') || q('skoid')) throw errors.authenticationFailed('Stored access policies and user delegation keys are not supported.');
  const isAccountSas = request.query.has('ss') || request.query.has('srt');
  let stringToSign: string;
  if (isAccountSas) {
    stringToSign = [request.account.name, q('sp'), q('ss'), q('srt'), q('st'), q('se'), q('sip'), q('spr'), version, q('ses'), ''].join('\n');
  } else {
    const resource = q('sr');
    if ((resource === 'c' && request.container === undefined) || (resource === 'b' && request.blob === undefined) || (resource !== 'c' && resource !== 'b')) {
      throw errors.resourceTypeMismatch();
    }
    const canonical = `/blob/${request.account.name}/${request.container}${resource === 'b' ? `/${request.blob}` : ''}`;
    stringToSign = [
      q('sp'),
      q('st'),
      q('se'),
      canonical,
      '',
      q('sip'),
      q('spr'),
      version,
      resource,
      '',
      q('ses'),
      ...RESPONSE_HEADER_OVERRIDES.map(([parameter]) => q(parameter)),
    ].join('\n');
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
  const overrides = isAccountSas ? [] : RESPONSE_HEADER_OVERRIDES.filter(([parameter]) => q(parameter));
  return { permissions: q('sp'), responseHeaders: Object.fromEntries(overrides.map(([parameter, name]) => [name, q(parameter)])) };
}
