/**
 * Who is calling, and may they? Bearer tokens of offcloud's identity issuer
 * (verified with src/identity's verifier, authorized by the data-plane roles of
 * its directory), Shared Key signatures with an account key, and shared access
 * signatures (sas.ts).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import {
  bearerToken,
  createTokenVerifier,
  dataRoleAssignmentsFor,
  identityIssuers,
  openDirectory,
  openSigningKeys,
  STORAGE_RESOURCE,
  TokenVerificationError,
  type DirectoryStore,
  type IssuerStyle,
  type TokenVerifier,
} from '../../identity/public.ts';
import { errors } from '../errors.ts';
import { isSasRequest, verifySas, type ResourceLevel, type SasGrant } from './sas.ts';
import type { StorageAccount } from '../persistence/accounts.ts';
import type { SignedIdentifier } from '../persistence/store.ts';
import { checkBearerVersion, type ServiceVersion } from './versions.ts';

/**
 * What an operation does, for authorization: `create` makes a container or writes a whole
 * blob (Put Blob, a copy, a snapshot), `write` changes one in parts (Put Block, Put Block
 * List) or its properties, `append` adds to an append blob; `tags` reads or sets blob index
 * tags, `filter` finds blobs by them.
 */
export type Action = 'read' | 'list' | 'create' | 'write' | 'append' | 'delete' | 'tags' | 'filter';

export type Principal =
  | { scheme: 'SharedKey' }
  | { scheme: 'Bearer'; principalId: string; tenantId: string }
  | ({ scheme: 'SAS' } & SasGrant)
  /** A request without credentials to a container with public access: `r` (blob), `rl` (container). */
  | { scheme: 'Anonymous'; permissions: string };

/**
 * The SAS permission letters (`sp`) that allow each action, by kind of SAS and the level the
 * request addresses, as the service documents them: an account SAS reaches every level its
 * `srt` names (List Containers; Create, Delete, Get Properties of a container and List Blobs;
 * the blob operations); a service SAS reaches only blobs, and List Blobs of its container:
 * no container operation, whatever its letters. `c` or `w` create (a container, a whole
 * blob); only `w` writes blocks and block lists.
 */
const SAS_PERMISSIONS: Record<SasGrant['kind'], Record<ResourceLevel, Partial<Record<Action, string>>>> = {
  account: {
    s: { read: 'r', list: 'l', write: 'w', filter: 'f' },
    c: { read: 'r', list: 'l', create: 'cw', write: 'w', delete: 'd' },
    o: { read: 'r', create: 'cw', write: 'w', append: 'aw', delete: 'd', tags: 't' },
  },
  service: {
    s: {},
    c: { list: 'l', filter: 'f' },
    o: { read: 'r', create: 'cw', write: 'w', append: 'aw', delete: 'd', tags: 't' },
  },
};

/** What anonymous callers may do in a container with public access (`r` blob, `rl` container). */
const ANONYMOUS_PERMISSIONS: Partial<Record<Action, string>> = { read: 'r', list: 'l' };

export interface AuthRequest {
  method: string;
  /** The request path as sent (percent-encoded), without the query. */
  rawPath: string;
  /** The query as canonicalQuery gives it. */
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** The request's x-ms-version, resolved (versions.ts). */
  version: ServiceVersion;
  secure: boolean;
  /** The caller's address (a SAS may name the addresses it is good for). */
  ip: string;
  account: StorageAccount;
  container: string | undefined;
  blob: string | undefined;
  /** The stored access policy of the addressed container with this id, for a SAS naming one. */
  accessPolicy?: (id: string) => SignedIdentifier | undefined;
}

export interface AuthenticatorOptions {
  dataDir: string;
  /** The identity directory file, when identity runs with --directory. */
  directoryFile?: string;
  /** Verify against this JWKS URL instead of the data dir's signing keys. */
  jwksUri?: string;
  caCertPath?: string;
  issuerStyle: IssuerStyle;
  /** The token issuer's origin: used for `local`-style issuers and in the 401 challenge. */
  authorityHost: string;
}

const READER_ROLES = new Set(['Storage Blob Data Reader', 'Storage Blob Data Contributor', 'Storage Blob Data Owner']);
const WRITER_ROLES = new Set(['Storage Blob Data Contributor', 'Storage Blob Data Owner']);

function header(headers: IncomingHttpHeaders, name: string): string {
  const value = headers[name];
  return Array.isArray(value) ? value.join(',') : (value ?? '');
}

/**
 * A request's query as the service reads it: names in lower case, and the values of a name
 * given more than once sorted and joined by commas. It is what Shared Key signs, and what
 * the handlers act on, so a signed `prefix=public/` cannot be replayed as
 * `prefix=&prefix=public/` to act on another value.
 */
export function canonicalQuery(raw: URLSearchParams): URLSearchParams {
  const values = new Map<string, string[]>();
  for (const [name, value] of raw) {
    const key = name.toLowerCase();
    values.set(key, [...(values.get(key) ?? []), value]);
  }
  return new URLSearchParams([...values].map(([name, given]) => [name, given.sort().join(',')]));
}

/** The Shared Key string-to-sign of a request (Blob service, version 2009-09-19 and later). */
export function sharedKeyStringToSign(request: AuthRequest, languageFirst: boolean): string {
  const h = (name: string) => header(request.headers, name);
  const contentLength = h('content-length') === '0' ? '' : h('content-length');
  const [first, second] = languageFirst ? ['content-language', 'content-encoding'] : ['content-encoding', 'content-language'];
  const standard = [
    request.method.toUpperCase(),
    h(first),
    h(second),
    contentLength,
    h('content-md5'),
    h('content-type'),
    h('date'),
    h('if-modified-since'),
    h('if-match'),
    h('if-none-match'),
    h('if-unmodified-since'),
    h('range'),
  ].join('\n');
  const canonicalHeaders = Object.keys(request.headers)
    .filter((name) => name.startsWith('x-ms-'))
    .sort()
    .map((name) => `${name}:${header(request.headers, name).trimStart()}\n`)
    .join('');
  const queryLines = [...request.query.keys()].sort().map((name) => `\n${name}:${request.query.get(name)}`);
  const canonicalResource = `/${request.account.name}${request.rawPath || '/'}` + queryLines.join('');
  return `${standard}\n${canonicalHeaders}${canonicalResource}`;
}

/** How far a signed request's date may be from this server's clock, as the service allows. */
export const SHARED_KEY_CLOCK_SKEW_MS = 15 * 60 * 1000;

/**
 * A Shared Key request is signed together with its date (`x-ms-date`, else `Date`), so
 * that a captured request cannot be replayed once that date is more than 15 minutes away.
 */
function checkRequestDate(headers: IncomingHttpHeaders): void {
  const given = header(headers, 'x-ms-date') || header(headers, 'date');
  if (!given) throw errors.authenticationFailed('Request date header not specified.');
  const date = Date.parse(given);
  if (Number.isNaN(date)) throw errors.authenticationFailed(`The date header in the request is not a valid HTTP date: '${given}'.`);
  const now = Date.now();
  if (date < now - SHARED_KEY_CLOCK_SKEW_MS) throw errors.authenticationFailed(`Request date header too old: '${given}'`);
  if (date > now + SHARED_KEY_CLOCK_SKEW_MS) throw errors.authenticationFailed(`Request date header too far in the future: '${given}'`);
}

function verifySharedKey(request: AuthRequest, credential: string): void {
  const match = /^SharedKey ([^:\s]+):([A-Za-z0-9+/=]+)$/.exec(credential);
  if (!match) throw errors.invalidAuthenticationInfo();
  if (match[1] !== request.account.name)
    throw errors.authenticationFailed(`The account ${match[1]} in the Authorization header does not match the account of the request.`);
  checkRequestDate(request.headers);
  const given = Buffer.from(match[2]!, 'base64');
  for (const key of request.account.keys) {
    for (const languageFirst of [false, true]) {
      const expected = createHmac('sha256', Buffer.from(key, 'base64')).update(sharedKeyStringToSign(request, languageFirst), 'utf8').digest();
      if (expected.length === given.length && timingSafeEqual(expected, given)) return;
    }
  }
  throw errors.authenticationFailed(
    "The MAC signature found in the HTTP request is not the same as any computed signature. Server used the account's keys to sign the request.",
  );
}

/** What each verifier failure reads as in <AuthenticationErrorDetail>. */
function authenticationDetail(err: TokenVerificationError): string {
  if (err.code === 'malformed' || err.code === 'missing_claim') return 'Authentication scheme Bearer is not supported.';
  return err.detail;
}

export class StorageAuthenticator {
  private readonly directory: DirectoryStore;
  private verifierFor: { tenants: string; verifier: TokenVerifier } | null = null;

  constructor(private readonly options: AuthenticatorOptions) {
    this.directory = openDirectory(options.dataDir, options.directoryFile);
  }

  /** Makes the identity directory and keys if this data dir has none yet (storage started alone). */
  async ensure(): Promise<void> {
    await this.directory.ensure();
    if (!this.options.jwksUri) await openSigningKeys(this.options.dataDir).ensure();
  }

  /** `WWW-Authenticate` for a request without credentials: unquoted, space-separated, as the SDK parses it. */
  async challenge(): Promise<string> {
    const tenant = (await this.directory.current()).defaultTenantId;
    const authority = this.options.issuerStyle === 'local' ? this.options.authorityHost : 'https://login.microsoftonline.com';
    return `Bearer authorization_uri=${authority}/${tenant}/oauth2/authorize resource_id=${STORAGE_RESOURCE.identifierUris[0]}`;
  }

  private async verifier(): Promise<TokenVerifier> {
    const directory = await this.directory.current();
    const tenants = directory.tenants.map((t) => t.id).join(',');
    if (this.verifierFor?.tenants !== tenants) {
      const keys = this.options.jwksUri
        ? { jwksUri: this.options.jwksUri, ...(this.options.caCertPath ? { caCertPath: this.options.caCertPath } : {}) }
        : (() => {
            const store = openSigningKeys(this.options.dataDir);
            return { jwks: async () => (await store.current()).jwks };
          })();
      this.verifierFor = {
        tenants,
        verifier: createTokenVerifier({
          keys,
          issuers: directory.tenants.flatMap((t) => identityIssuers(t.id, this.options.issuerStyle, this.options.authorityHost)),
          audiences: [],
        }),
      };
    }
    return this.verifierFor.verifier;
  }

  async authenticate(request: AuthRequest): Promise<Principal> {
    const credential = header(request.headers, 'authorization');
    if (!credential && isSasRequest(request.query)) return { scheme: 'SAS', ...verifySas(request) };
    if (!credential) throw errors.noAuthentication(await this.challenge());
    if (/^SharedKey /.test(credential)) {
      verifySharedKey(request, credential);
      return { scheme: 'SharedKey' };
    }
    if (!/^Bearer /i.test(credential)) throw errors.invalidAuthenticationInfo();
    if (!request.secure) throw errors.authenticationFailed('Authentication scheme Bearer is not allowed with HTTP.');
    checkBearerVersion(request.version);
    const token = bearerToken(credential);
    if (!token) throw errors.authenticationFailed('Authentication scheme Bearer is not supported.');
    const account = request.account.name;
    try {
      const verified = await (
        await this.verifier()
      ).verify(token, {
        audiences: [
          ...STORAGE_RESOURCE.identifierUris,
          STORAGE_RESOURCE.appId,
          `https://${account}.blob.core.windows.net`,
          `https://${account}.blob.localhost`,
        ],
      });
      return { scheme: 'Bearer', principalId: verified.principalId, tenantId: verified.tenantId };
    } catch (err) {
      if (err instanceof TokenVerificationError) throw errors.authenticationFailed(authenticationDetail(err));
      throw err;
    }
  }

  /** `target` is `/storage/<account>[/<container>]`; Shared Key (the account key) may do everything, a SAS what it says. */
  async authorize(principal: Principal, action: Action, target: string): Promise<void> {
    if (principal.scheme === 'SharedKey') return;
    if (principal.scheme === 'Anonymous') {
      if (!principal.permissions.includes(ANONYMOUS_PERMISSIONS[action] ?? '-')) throw errors.permissionMismatch();
      return;
    }
    if (principal.scheme === 'SAS') {
      const letters = SAS_PERMISSIONS[principal.kind][principal.level][action] ?? '';
      if (![...letters].some((letter) => principal.permissions.includes(letter))) throw errors.permissionMismatch();
      // A user delegation SAS may do no more than the identity that asked for its key, now.
      if (principal.delegatedBy === undefined) return;
    }
    const principalId = principal.scheme === 'SAS' ? principal.delegatedBy! : principal.principalId;
    const assignments = dataRoleAssignmentsFor(await this.directory.current(), principalId, target);
    const allowed = action === 'read' || action === 'list' ? READER_ROLES : WRITER_ROLES;
    if (!assignments.some((a) => allowed.has(a.role))) throw errors.permissionMismatch();
  }
}
