/**
 * hmac-auth (Kong PRIORITY 1030): a request signed with a consumer's
 * hmacauth_credentials secret, as Kong documents it. The client sends
 * `Authorization` (or `Proxy-Authorization`, tried first)
 * `hmac username="…", algorithm="hmac-sha256", headers="date request-line", signature="<base64>"`
 * and a `Date` or `X-Date` within `clock_skew` seconds. The signed string
 * is one line per listed header, joined by "\n": `name: value` (`name:`
 * when the request lacks it), and for `request-line` the request's
 * `METHOD /path?query HTTP/1.1`; the signature is that string's HMAC with
 * the credential's secret. With `validate_request_body`, a `Digest:
 * SHA-256=<base64>` of the body must match (no Digest: only an empty body
 * passes). Kong 3.x's 401 answers: `Unauthorized` (no authorization
 * header), the date message, `HMAC signature cannot be verified`, `HMAC
 * signature does not match`.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { Field } from '../../config/schema.ts';
import { GatewayError } from '../../errors.ts';
import { alreadyAuthenticated, failOrAnonymous, setConsumer } from '../authentication.ts';
import { definePlugin, type RequestContext } from '../types.ts';

const ALGORITHMS = ['hmac-sha1', 'hmac-sha256', 'hmac-sha384', 'hmac-sha512'] as const;
type Algorithm = (typeof ALGORITHMS)[number];

interface HmacAuthConfig {
  hide_credentials: boolean;
  clock_skew: number;
  anonymous: string | null;
  validate_request_body: boolean;
  enforce_headers: string[];
  algorithms: Algorithm[];
  realm: string | null;
}

const hmacAuthFields: Record<string, Field> = {
  hide_credentials: { type: 'boolean', default: false },
  clock_skew: { type: 'number', default: 300, greaterThan: 0 },
  anonymous: { type: 'string', default: null },
  validate_request_body: { type: 'boolean', default: false },
  enforce_headers: { type: 'array', default: [], elements: { type: 'string' } },
  algorithms: { type: 'array', default: [...ALGORITHMS], elements: { type: 'string', oneOf: ALGORITHMS } },
  realm: { type: 'string', default: null },
};

const NOT_VALID = 'HMAC signature cannot be verified';
const NOT_SAME = 'HMAC signature does not match';
const NO_DATE = 'HMAC signature cannot be verified, a valid date or x-date header is required for HMAC Authentication';

/** Kong's pattern for the header's fields (in this order). */
const HMAC_FIELDS = /\s*[Hh]mac\s*username="(.+)",\s*algorithm="(.+)",\s*headers="(.+)",\s*signature="(.+)"/;

interface Signed {
  username: string;
  algorithm: string;
  headers: string[];
  signature: string;
}

function signedFields(value: string | undefined): Signed | null {
  const found = value === undefined ? null : HMAC_FIELDS.exec(value);
  if (!found) return null;
  return { username: found[1]!, algorithm: found[2]!, headers: found[3]!.split(' ').filter(Boolean), signature: found[4]! };
}

function header(ctx: RequestContext, name: string): string | undefined {
  const value = ctx.clientHeaders[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** A Date / X-Date header within `skew` seconds of now. */
function dateWithin(ctx: RequestContext, name: string, skew: number): boolean {
  const value = header(ctx, name);
  const at = value === undefined ? NaN : Date.parse(value);
  return Number.isFinite(at) && Math.abs(Date.now() - at) / 1000 <= skew;
}

/** The string the client signed, for the request target given. */
export function signingString(ctx: RequestContext, headers: readonly string[], target: string): string {
  return headers
    .map((name) => {
      const value = header(ctx, name);
      if (value !== undefined) return `${name}: ${value}`;
      if (name === 'request-line') return `${ctx.method} ${target} HTTP/${ctx.httpVersion()}`;
      return `${name}:`;
    })
    .join('\n');
}

function digestOf(algorithm: Algorithm, secret: string, text: string): Buffer {
  return createHmac(algorithm.slice('hmac-'.length), secret).update(text).digest();
}

function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export const hmacAuth = definePlugin<HmacAuthConfig>({ name: 'hmac-auth', priority: 1030, configFields: hmacAuthFields, noConsumer: true }, (conf) => {
  const challenge = conf.realm ? { 'WWW-Authenticate': `hmac realm="${conf.realm}"` } : undefined;
  const refuse = (message: string) => new GatewayError(401, message, challenge);

  /** The credential the request proves, or the refusal. */
  const authenticate = async (ctx: RequestContext) => {
    const proxyAuthorization = header(ctx, 'proxy-authorization');
    const authorization = header(ctx, 'authorization');
    if (proxyAuthorization === undefined && authorization === undefined) return refuse('Unauthorized');
    if (!dateWithin(ctx, 'x-date', conf.clock_skew) && !dateWithin(ctx, 'date', conf.clock_skew)) return refuse(NO_DATE);
    let signed = signedFields(proxyAuthorization);
    const used = signed ? 'proxy-authorization' : 'authorization';
    signed ??= signedFields(authorization);
    if (conf.hide_credentials) delete ctx.upstreamHeaders[used];
    if (!signed || conf.enforce_headers.some((name) => !signed.headers.includes(name))) return refuse(NOT_VALID);
    const algorithm = conf.algorithms.find((a) => a === signed.algorithm);
    if (!algorithm) return refuse(NOT_VALID);
    const credential = ctx.directory.findHmacauthCredential(signed.username);
    const consumer = credential && ctx.directory.findConsumer(credential.consumer.id);
    if (!credential || !consumer) return refuse(NOT_VALID);
    const given = Buffer.from(signed.signature, 'base64');
    // Kong checks the path with its query, then (deprecated) the normalized path alone.
    const matches = [ctx.requestTarget(), ctx.path].some((target) =>
      sameBytes(digestOf(algorithm, credential.secret, signingString(ctx, signed.headers, target)), given),
    );
    if (!matches) return refuse(NOT_SAME);
    if (conf.validate_request_body) {
      const body = await ctx.readBody();
      const digest = header(ctx, 'digest');
      const ok = digest === undefined ? body.length === 0 : digest === `SHA-256=${createHash('sha256').update(body).digest('base64')}`;
      if (!ok) return refuse(NOT_SAME);
    }
    setConsumer(ctx, consumer, credential, credential.username);
    return null;
  };

  return {
    async access(ctx) {
      if (alreadyAuthenticated(ctx, conf.anonymous)) return;
      const failure = await authenticate(ctx);
      if (failure) failOrAnonymous(ctx, conf.anonymous, failure);
    },
  };
});
