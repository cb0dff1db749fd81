/**
 * Shared access signatures signed with an account key: service SAS (a container or
 * one blob) and account SAS (the blob service), of every signed version the service
 * accepts (sas-string-to-sign.ts), as the storage SDK's generateSasUrl and
 * generateAccountSasUrl make them; service SAS naming a container's stored access policy
 * (`si`), and user delegation SAS (`skoid`…, signed with a key from Get User Delegation
 * Key, user-delegation.ts). A service SAS's response-header overrides (rscc, rscd, rsce,
 * rscl, rsct) are part of what it signs, and replace those headers of the blob it reads.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { isIPv4 } from 'node:net';
import { errors } from '../errors.ts';
import type { StorageAccount } from '../persistence/accounts.ts';
import type { SignedIdentifier } from '../persistence/store.ts';
import { isWellFormedVersion } from './versions.ts';
import {
  accountSasStringToSign,
  canonicalSasResource,
  RESPONSE_HEADER_FIELDS,
  serviceSasStringToSign,
  userDelegationSasStringToSign,
} from './sas-string-to-sign.ts';
import { userDelegationKeyValue } from './user-delegation.ts';

export interface SasRequest {
  query: URLSearchParams;
  secure: boolean;
  /** The caller's address, for `sip`. */
  ip: string;
  account: StorageAccount;
  container: string | undefined;
  blob: string | undefined;
  /** The stored access policy of the addressed container with this id (Set Container ACL). */
  accessPolicy?: (id: string) => SignedIdentifier | undefined;
}

/** The level a request addresses, as an account SAS's `srt` letters name it: the service, a container, a blob (object). */
export type ResourceLevel = 's' | 'c' | 'o';

/** What a verified SAS grants: its kind, the level it was used on, its permission letters and the response headers it sets. */
export interface SasGrant {
  kind: 'account' | 'service';
  level: ResourceLevel;
  permissions: string;
  /** Header name → value, from a service SAS's rscc…rsct. */
  responseHeaders: Record<string, string>;
  /** A user delegation SAS: the object id whose data roles also bound what it may do. */
  delegatedBy?: string;
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

/** Whether one of the keys (base64: the account's, or user delegation keys) signed `stringToSign`. */
function signatureMatches(keys: string[], stringToSign: string, signature: string): boolean {
  const given = Buffer.from(signature, 'base64');
  return keys.some((key) => {
    const expected = createHmac('sha256', Buffer.from(key, 'base64')).update(stringToSign, 'utf8').digest();
    return expected.length === given.length && timingSafeEqual(expected, given);
  });
}

function resourceLevel(request: SasRequest): ResourceLevel {
  if (request.blob !== undefined) return 'o';
  return request.container !== undefined ? 'c' : 's';
}

/** `st` and `se` in the ISO 8601 UTC forms the service accepts: a date, or a date and a time ending in Z. */
function isSasTime(text: string): boolean {
  const match = /^(\d{4}-\d{2}-\d{2})(T\d{2}:\d{2}(:\d{2}(\.\d{1,7})?)?Z)?$/.exec(text);
  return match !== null && isWellFormedVersion(match[1]!) && !Number.isNaN(Date.parse(text));
}

/** The letters a field may hold. */
const FIELD_LETTERS = { sp: /^[racwdxyltmeopfiu]+$/, ss: /^[bfqt]+$/, srt: /^[sco]+$/ } as const;
/** An HMAC-SHA256 in canonical base64: 32 bytes, 43 characters (the last with its two spare bits 0) and one `=`. */
const SIGNATURE = /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/;

/**
 * Refuses a SAS whose fields are not exactly in the service's forms: a signature with
 * junk appended or its padding changed, a version that is no date, a protocol other
 * than `https` or `https,http`, times that are not ISO 8601 UTC, unknown letters.
 */
function checkFields(q: (name: string) => string, isAccountSas: boolean): void {
  const refuse = (field: string) => errors.authenticationFailed(`The value of the SAS field ${field} is not in the form the service accepts: '${q(field)}'.`);
  if (!SIGNATURE.test(q('sig'))) throw refuse('sig');
  if (q('spr') && q('spr') !== 'https' && q('spr') !== 'https,http') throw refuse('spr');
  if (q('st') && !isSasTime(q('st'))) throw refuse('st');
  // A SAS naming a stored access policy may leave its expiry and permissions to the policy.
  if (!(q('si') && !q('se')) && !isSasTime(q('se'))) throw refuse('se');
  if (!(q('si') && !q('sp')) && !FIELD_LETTERS.sp.test(q('sp'))) throw refuse('sp');
  if (isAccountSas && !FIELD_LETTERS.ss.test(q('ss'))) throw refuse('ss');
  if (isAccountSas && !FIELD_LETTERS.srt.test(q('srt'))) throw refuse('srt');
}

/**
 * The permissions and time window of a SAS: its own, or those of the stored access policy
 * it names (`si`). A field may be in the SAS or in the policy, not both, as the service says;
 * a policy that is gone (or never was) revokes every SAS naming it.
 */
function withAccessPolicy(request: SasRequest, q: (name: string) => string): { permissions: string; start: string; expiry: string } {
  const own = { permissions: q('sp'), start: q('st'), expiry: q('se') };
  if (!q('si')) return own;
  const policy = request.accessPolicy?.(q('si'));
  if (!policy) throw errors.authenticationFailed(`The stored access policy '${q('si')}' does not exist on this container.`);
  const pick = (field: string, given: string, stored: string | undefined) => {
    if (given && stored) throw errors.authenticationFailed(`The SAS and its stored access policy both give ${field}.`);
    return given || (stored ?? '');
  };
  return {
    permissions: pick('sp', own.permissions, policy.permission),
    start: pick('st', own.start, policy.start),
    expiry: pick('se', own.expiry, policy.expiry),
  };
}

/** Checks a SAS request and returns what it grants. */
export function verifySas(request: SasRequest, now = Date.now()): SasGrant {
  const q = (name: string) => request.query.get(name) ?? '';
  const version = q('sv');
  // A SAS without `sv` is the 2009-09-19 form; one with it names a service version.
  if (request.query.has('sv') && !isWellFormedVersion(version)) {
    throw errors.authenticationFailed(`Signed version '${version}' is not a service version (YYYY-MM-DD).`);
  }
  const isAccountSas = request.query.has('ss') || request.query.has('srt');
  checkFields(q, isAccountSas);
  const delegated = request.query.has('skoid');
  if (isAccountSas && (q('si') || delegated)) throw errors.authenticationFailed('An account SAS names no stored access policy or user delegation key.');
  let stringToSign: string;
  let keys: string[] = request.account.keys;
  if (isAccountSas) {
    stringToSign = accountSasStringToSign(q, request.account.name);
  } else {
    const resource = q('sr');
    if ((resource === 'c' && request.container === undefined) || (resource === 'b' && request.blob === undefined) || (resource !== 'c' && resource !== 'b')) {
      throw errors.resourceTypeMismatch();
    }
    const canonical = canonicalSasResource(version, request.account.name, request.container!, resource === 'b' ? request.blob : undefined);
    if (delegated) {
      stringToSign = userDelegationSasStringToSign(q, canonical, '');
      const fields = { objectId: q('skoid'), tenantId: q('sktid'), start: q('skt'), expiry: q('ske'), service: q('sks'), version: q('skv') };
      keys = request.account.keys.map((_, index) => userDelegationKeyValue(request.account, fields, index));
      const keyStart = Date.parse(fields.start);
      const keyExpiry = Date.parse(fields.expiry);
      if (fields.service !== 'b' || Number.isNaN(keyStart) || Number.isNaN(keyExpiry) || now < keyStart || now > keyExpiry) {
        throw errors.authenticationFailed('The user delegation key is not valid now or not for the blob service.');
      }
    } else {
      stringToSign = serviceSasStringToSign(q, canonical, '');
    }
  }
  if (!signatureMatches(keys, stringToSign, q('sig'))) {
    throw errors.authenticationFailed(`Signature did not match. String to sign used was ${stringToSign}`);
  }
  const { permissions, start: startText, expiry: expiryText } = withAccessPolicy(request, q);
  const start = startText ? Date.parse(startText) : -Infinity;
  const expiry = Date.parse(expiryText);
  if (!(now >= start && now <= expiry)) {
    throw errors.authenticationFailed(
      `Signature not valid in the specified time frame: Start [${startText}] - Expiry [${expiryText}] - Current [${new Date(now).toUTCString()}]`,
    );
  }
  if (q('spr') === 'https' && !request.secure) throw errors.protocolMismatch();
  if (q('sip') && !ipAllowed(request.ip, q('sip'))) throw errors.sourceIpMismatch(request.ip);
  const level = resourceLevel(request);
  if (isAccountSas) {
    if (!q('ss').includes('b')) throw errors.serviceMismatch();
    if (!q('srt').includes(level)) throw errors.resourceTypeMismatch();
  }
  // An account SAS does not sign overrides, so it sets none.
  const overrides = isAccountSas ? [] : RESPONSE_HEADER_FIELDS.filter((parameter) => q(parameter));
  return {
    kind: isAccountSas ? 'account' : 'service',
    level,
    permissions,
    responseHeaders: Object.fromEntries(overrides.map((parameter) => [RESPONSE_HEADER_OVERRIDES[parameter], q(parameter)])),
    ...(delegated ? { delegatedBy: q('skoid') } : {}),
  };
}
