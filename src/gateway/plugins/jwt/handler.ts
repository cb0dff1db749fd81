/**
 * jwt (Kong PRIORITY 1450): a token from the query string, a cookie or a
 * `Bearer` header, its consumer found by the claim `key_claim_name` (`iss`)
 * among the jwt_secrets, its signature verified with `jose` for the
 * secret's algorithm, then `exp`/`nbf` and `maximum_expiration` checked.
 * Messages, statuses and WWW-Authenticate challenges are Kong 3.x's.
 */
import { compactVerify, decodeJwt, decodeProtectedHeader, importSPKI, type JWTPayload, type ProtectedHeaderParameters } from 'jose';
import { GatewayError, PluginAnswer } from '../../errors.ts';
import type { JwtSecret } from '../../config/model.ts';
import { alreadyAuthenticated, failOrAnonymous, setConsumer } from '../authentication.ts';
import { definePlugin, type RequestContext } from '../types.ts';
import { checkJwtConfig, jwtFields, type JwtConfig } from './schema.ts';

const BEARER = /\s*[Bb]earer\s+(.+)/;

/** Every distinct token the request carries (query arguments, cookies, then headers, as Kong looks). */
function tokensOf(ctx: RequestContext, conf: JwtConfig): Set<string> {
  const tokens = new Set<string>();
  if (ctx.query) {
    const params = new URLSearchParams(ctx.query);
    for (const name of conf.uri_param_names) for (const value of params.getAll(name)) if (value !== '') tokens.add(value);
  }
  if (conf.cookie_names.length && ctx.clientHeaders.cookie) {
    const cookies = new Map<string, string>();
    for (const pair of ctx.clientHeaders.cookie.split(';')) {
      const eq = pair.indexOf('=');
      if (eq > 0) cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
    for (const name of conf.cookie_names) {
      const value = cookies.get(name);
      if (value) tokens.add(value);
    }
  }
  for (const name of conf.header_names) {
    const value = ctx.clientHeaders[name.toLowerCase()];
    const header = Array.isArray(value) ? value[0] : value;
    const found = header === undefined ? null : BEARER.exec(header);
    if (found?.[1]) tokens.add(found[1]);
  }
  return tokens;
}

/** Kong's registered-claim checks: each listed claim must be a number, `exp` in the future, `nbf` in the past. */
function claimErrors(claims: JWTPayload, conf: JwtConfig, now: number): Record<string, string> | null {
  let errors: Record<string, string> | null = null;
  for (const name of conf.claims_to_verify ?? []) {
    const value = claims[name];
    if (typeof value !== 'number') (errors ??= {})[name] = 'must be a number';
    else if (name === 'exp' && value <= now) (errors ??= {})[name] = 'token expired';
    else if (name === 'nbf' && value > now) (errors ??= {})[name] = 'token not valid yet';
  }
  if (errors === null && conf.maximum_expiration > 0) {
    const exp = claims.exp;
    if (typeof exp !== 'number' || exp - now > conf.maximum_expiration) errors = { exp: 'exceeds maximum allowed expiration' };
  }
  return errors;
}

export const jwt = definePlugin<JwtConfig>({ name: 'jwt', priority: 1450, configFields: jwtFields, checkConfig: checkJwtConfig, noConsumer: true }, (conf) => {
  const challenge = conf.realm ? `Bearer realm="${conf.realm}"` : 'Bearer';
  const invalid = `${challenge} error="invalid_token"`;
  const refuse = (message: string, www = invalid) => new GatewayError(401, message, { 'WWW-Authenticate': www });
  /**
   * Verification keys, imported once per secret of this configuration as
   * WebCrypto keys (what jose verifies with; importing one for each token
   * cost more than the verification itself).
   */
  const keys = new WeakMap<JwtSecret, Promise<CryptoKey>>();
  const keyOf = (secret: JwtSecret): Promise<CryptoKey> => {
    let key = keys.get(secret);
    if (!key) {
      const decode = (value: string) => (conf.secret_is_base64 ? Buffer.from(value, 'base64') : Buffer.from(value));
      key = secret.algorithm.startsWith('HS')
        ? crypto.subtle.importKey('raw', decode(secret.secret), { name: 'HMAC', hash: `SHA-${secret.algorithm.slice(2)}` }, false, ['verify'])
        : importSPKI(decode(secret.rsa_public_key!).toString('utf8'), secret.algorithm);
      keys.set(secret, key);
    }
    return key;
  };

  /** The outcome for one token: the secret it is signed with and its claims, or the refusal. */
  const check = (token: string, directory: RequestContext['directory']): { secret: JwtSecret; claims: JWTPayload } | GatewayError => {
    if (token.split('.').length !== 3) return refuse('Bad token; invalid JWT');
    let header: ProtectedHeaderParameters;
    let claims: JWTPayload;
    try {
      header = decodeProtectedHeader(token);
      claims = decodeJwt(token);
    } catch {
      return refuse('Bad token; invalid JSON');
    }
    const key = claims[conf.key_claim_name] ?? (header as Record<string, unknown>)[conf.key_claim_name];
    if (key === undefined || key === null) return refuse(`No mandatory '${conf.key_claim_name}' in claims`);
    if (key === '' || typeof key !== 'string') return refuse(`Invalid '${conf.key_claim_name}' in claims`);
    const secret = directory.findJwtSecret(key);
    if (!secret) return refuse(`No credentials found for given '${conf.key_claim_name}'`);
    if (header.alg !== secret.algorithm) return refuse('Invalid algorithm');
    return { secret, claims };
  };

  const authenticate = async (ctx: RequestContext): Promise<void> => {
    const tokens = tokensOf(ctx, conf);
    if (tokens.size === 0) throw refuse('Unauthorized', challenge);
    if (tokens.size > 1) throw refuse('Multiple tokens provided');
    const [token] = tokens as unknown as [string];
    const found = check(token, ctx.directory);
    if (found instanceof GatewayError) throw found;
    const { secret, claims } = found;
    try {
      await compactVerify(token, await keyOf(secret), { algorithms: [secret.algorithm] });
    } catch {
      throw refuse('Invalid signature');
    }
    const errors = claimErrors(claims, conf, Math.floor(Date.now() / 1000));
    if (errors) throw new PluginAnswer(401, JSON.stringify(errors), { 'Content-Type': 'application/json; charset=utf-8', 'WWW-Authenticate': invalid });
    const consumer = ctx.directory.findConsumer(secret.consumer.id);
    if (!consumer) throw new GatewayError(401, `Could not find consumer for '${conf.key_claim_name}=${secret.key}'`);
    setConsumer(ctx, consumer, secret, secret.key);
  };

  return {
    access(ctx) {
      if (!conf.run_on_preflight && ctx.method === 'OPTIONS') return;
      if (alreadyAuthenticated(ctx, conf.anonymous)) return;
      return authenticate(ctx).catch((err: unknown) => {
        if (!(err instanceof GatewayError) || err.status !== 401) throw err;
        failOrAnonymous(ctx, conf.anonymous, err);
      });
    },
  };
});
