/**
 * The token verifier any API of this project uses to check the bearer tokens
 * of this issuer (§5: "The API must verify the token"): RS256 signature
 * against the issuer's keys (in process, or JWKS over HTTPS fetched, cached
 * and refetched on an unknown `kid`), `iss`, `aud`, `exp`/`nbf` with a small
 * skew, optionally the tenant and required app roles. Every failure is a
 * TokenVerificationError with a stable `code` that callers map to their own
 * wire format (storage: 403 AuthenticationFailed + AuthenticationErrorDetail).
 */
import { readFileSync } from 'node:fs';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  decodeProtectedHeader,
  errors as joseErrors,
  jwtVerify,
  type FetchImplementation,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import { Agent, fetch as undiciFetch } from 'undici';

export type TokenVerificationErrorCode =
  /** No token, or not three base64url parts of JSON. */
  | 'malformed'
  /** `alg` other than RS256 (including `none`). */
  | 'unsupported_algorithm'
  /** No published key has the token's `kid`. */
  | 'unknown_key'
  | 'invalid_signature'
  | 'invalid_issuer'
  | 'invalid_audience'
  | 'expired'
  | 'not_yet_valid'
  /** `exp`, `nbf`, `iat`, `oid` or `tid` absent or of the wrong type. */
  | 'missing_claim'
  | 'wrong_tenant'
  /** Valid token without a required app role (an authorization, not authentication, failure). */
  | 'missing_role'
  /** The JWKS could not be fetched. */
  | 'keys_unavailable';

export class TokenVerificationError extends Error {
  constructor(
    readonly code: TokenVerificationErrorCode,
    /** A sentence for people and for error bodies; never contains the token. */
    readonly detail: string,
  ) {
    super(`${code}: ${detail}`);
    this.name = 'TokenVerificationError';
  }
}

/** Claims of this issuer's app-only access tokens (reference §4.2). */
export interface AccessTokenClaims extends JWTPayload {
  iss: string;
  aud: string;
  exp: number;
  nbf: number;
  iat: number;
  /** Object id of the client's service principal or of the managed identity. */
  oid: string;
  sub: string;
  tid: string;
  ver: '1.0' | '2.0';
  /** v1 tokens: the client application id and how it authenticated ("1" secret, "2" certificate/managed identity). */
  appid?: string;
  appidacr?: string;
  /** v2 tokens: the same two facts. */
  azp?: string;
  azpacr?: string;
  roles?: string[];
  idtyp?: string;
  uti?: string;
  /** Managed identity tokens: the identity's resource id. */
  xms_mirid?: string;
}

export interface VerifiedToken {
  claims: AccessTokenClaims;
  /** `oid`: whom role assignments are keyed by. */
  principalId: string;
  tenantId: string;
  /** `appid` (v1) or `azp` (v2). */
  clientAppId: string;
  /** Empty when the token has no `roles` claim. */
  roles: string[];
  version: '1.0' | '2.0';
  keyId: string;
}

/** Where the verifier gets the issuer's public keys. */
export type KeySource =
  /** In process: a JWKS, or a function returning the current one (follows rotations). */
  | { jwks: JSONWebKeySet | (() => JSONWebKeySet | Promise<JSONWebKeySet>) }
  /**
   * Remote: the `jwks_uri` of the discovery document. Trusts the system CAs plus
   * `ca` (PEM text) or the file `caCertPath` (the local CA of `offcloud up`).
   */
  | { jwksUri: string; ca?: string; caCertPath?: string; cooldownSeconds?: number };

export interface TokenVerifierOptions {
  keys: KeySource;
  /** Accepted `iss` values, exact (e.g. identityIssuers(tenantId) for v1 and v2). */
  issuers: string[];
  /** Accepted `aud` values; URIs match with or without a trailing slash, GUIDs case-insensitively. */
  audiences: string[];
  /** When set, `tid` must equal it. */
  tenantId?: string;
  /** Every one of these must be in `roles`. */
  requiredRoles?: string[];
  /** Allowed clock difference for `exp` and `nbf` (default 300 s, as the Microsoft validators). */
  clockSkewSeconds?: number;
}

export interface VerifyOverrides {
  audiences?: string[];
  requiredRoles?: string[];
}

export interface TokenVerifier {
  verify(token: string, overrides?: VerifyOverrides): Promise<VerifiedToken>;
}

function normalizeAudience(value: string): string {
  return value.replace(/\/+$/, '').toLowerCase();
}

function localKeyResolver(source: Extract<KeySource, { jwks: unknown }>): JWTVerifyGetKey {
  const provide = typeof source.jwks === 'function' ? source.jwks : () => source.jwks as JSONWebKeySet;
  let last: { jwks: JSONWebKeySet; resolve: JWTVerifyGetKey } | null = null;
  return async (header, token) => {
    const jwks = await provide();
    // A key set object is imported once; a new object (after rotation) is imported again.
    if (last?.jwks !== jwks) last = { jwks, resolve: createLocalJWKSet(jwks) };
    return last.resolve(header, token);
  };
}

function remoteKeyResolver(source: Extract<KeySource, { jwksUri: string }>): JWTVerifyGetKey {
  const ca = source.ca ?? (source.caCertPath ? readFileSync(source.caCertPath, 'utf8') : undefined);
  const dispatcher = ca ? new Agent({ connect: { ca } }) : undefined;
  const fetchWithCa: FetchImplementation = (url, options) =>
    undiciFetch(url, { ...options, ...(dispatcher ? { dispatcher } : {}) } as Parameters<typeof undiciFetch>[1]) as unknown as Promise<Response>;
  return createRemoteJWKSet(new URL(source.jwksUri), {
    cooldownDuration: (source.cooldownSeconds ?? 30) * 1000,
    [customFetch]: fetchWithCa,
  });
}

function translate(err: unknown): TokenVerificationError {
  if (err instanceof TokenVerificationError) return err;
  if (err instanceof joseErrors.JWTExpired) return new TokenVerificationError('expired', 'Lifetime validation failed. The token is expired.');
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    if (err.claim === 'nbf') return new TokenVerificationError('not_yet_valid', 'Lifetime validation failed. The token is not yet valid.');
    if (err.claim === 'iss') return new TokenVerificationError('invalid_issuer', 'Invalid token issuer.');
    if (err.claim === 'aud') return new TokenVerificationError('invalid_audience', 'Invalid token audience.');
    return new TokenVerificationError('missing_claim', `The token's "${err.claim}" claim is missing or invalid.`);
  }
  if (err instanceof joseErrors.JWKSNoMatchingKey) {
    return new TokenVerificationError('unknown_key', 'The token was signed with a key this issuer does not publish.');
  }
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) {
    return new TokenVerificationError('invalid_signature', 'The token signature is invalid.');
  }
  if (err instanceof joseErrors.JOSEAlgNotAllowed || err instanceof joseErrors.JOSENotSupported) {
    return new TokenVerificationError('unsupported_algorithm', 'The token is not signed with RS256.');
  }
  if (err instanceof joseErrors.JWKSTimeout || err instanceof joseErrors.JWKSInvalid || err instanceof TypeError) {
    return new TokenVerificationError('keys_unavailable', `The issuer's signing keys could not be fetched: ${(err as Error).message}`);
  }
  if (err instanceof joseErrors.JWSInvalid || err instanceof joseErrors.JWTInvalid) {
    return new TokenVerificationError('malformed', 'The token is not a well-formed JWT.');
  }
  if (err instanceof joseErrors.JOSEError) return new TokenVerificationError('malformed', `The token was rejected: ${err.message}`);
  return new TokenVerificationError('keys_unavailable', `The issuer's signing keys could not be read: ${(err as Error).message}`);
}

function requireString(claims: JWTPayload, name: string): string {
  const value = claims[name];
  if (typeof value !== 'string' || value === '') {
    throw new TokenVerificationError('missing_claim', `The token's "${name}" claim is missing.`);
  }
  return value;
}

export function createTokenVerifier(options: TokenVerifierOptions): TokenVerifier {
  const getKey = 'jwks' in options.keys ? localKeyResolver(options.keys) : remoteKeyResolver(options.keys);
  const skew = options.clockSkewSeconds ?? 300;
  return {
    async verify(token, overrides = {}) {
      if (typeof token !== 'string' || token.split('.').length !== 3) {
        throw new TokenVerificationError('malformed', 'The token is not a well-formed JWT.');
      }
      let header: ReturnType<typeof decodeProtectedHeader>;
      try {
        header = decodeProtectedHeader(token);
      } catch {
        throw new TokenVerificationError('malformed', 'The token header is not valid base64url JSON.');
      }
      if (header.alg !== 'RS256') throw new TokenVerificationError('unsupported_algorithm', 'The token is not signed with RS256.');
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, getKey, {
          algorithms: ['RS256'],
          issuer: options.issuers,
          clockTolerance: skew,
          requiredClaims: ['exp', 'nbf', 'iat'],
        }));
      } catch (err) {
        throw translate(err);
      }
      // Audiences compare leniently, as storage accepts `https://storage.azure.com` with or without `/`.
      const accepted = new Set((overrides.audiences ?? options.audiences).map(normalizeAudience));
      const audiences = Array.isArray(payload.aud) ? payload.aud : typeof payload.aud === 'string' ? [payload.aud] : [];
      if (!audiences.some((a) => accepted.has(normalizeAudience(a)))) {
        throw new TokenVerificationError('invalid_audience', 'Invalid token audience.');
      }
      const claims = payload as AccessTokenClaims;
      const tenantId = requireString(payload, 'tid');
      const principalId = requireString(payload, 'oid');
      if (options.tenantId && tenantId.toLowerCase() !== options.tenantId.toLowerCase()) {
        throw new TokenVerificationError('wrong_tenant', 'The token was issued for another tenant.');
      }
      const roles = Array.isArray(claims.roles) ? claims.roles.filter((r): r is string => typeof r === 'string') : [];
      const missing = (overrides.requiredRoles ?? options.requiredRoles ?? []).filter((r) => !roles.includes(r));
      if (missing.length) {
        throw new TokenVerificationError('missing_role', `The token lacks the app role(s) ${missing.join(', ')}.`);
      }
      return {
        claims,
        principalId,
        tenantId,
        clientAppId: claims.appid ?? claims.azp ?? '',
        roles,
        version: claims.ver === '2.0' ? '2.0' : '1.0',
        keyId: String(header.kid ?? ''),
      };
    },
  };
}

/**
 * Reads the bearer token of an `Authorization` header: the token, or null
 * when the header is absent or not of the `Bearer <token>` form.
 */
export function bearerToken(header: string | string[] | undefined): string | null {
  if (typeof header !== 'string') return null;
  const match = /^Bearer +([A-Za-z0-9_\-.~+/]+=*) *$/i.exec(header);
  return match ? match[1]! : null;
}
