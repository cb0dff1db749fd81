/**
 * The token issuer over HTTPS: discovery documents (v2 and v1), the JWKS,
 * instance discovery, and the client credentials token endpoints (§4.9 and
 * the v1 endpoint). Thin handlers over tokens.ts; every answer is JSON,
 * errors included (reference §1.3, §1.4).
 */
import type { Counter } from 'prom-client';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { installErrorHandler, sendWireAnswer } from '../common/http.ts';
import { findTenant, type Directory } from './directory/index.ts';
import { AadError, aad, toWireError } from './errors.ts';
import { issuerFor } from './issuer.ts';
import { issueClientCredentialsToken, type IssuerContext, type TokenParameters } from './tokens.ts';

export interface IssuerRoutesOptions {
  /** The directory, signing keys and settings as of this request. */
  context(): Promise<IssuerContext>;
  /** The origin clients reach this server at, for the URLs in discovery documents. */
  origin(): string;
  /** Counts each token handed out, by grant. */
  tokensIssued: Counter<'grant'>;
}

/** Largest token request body accepted; real requests are well under 2 KiB. */
export const TOKEN_BODY_LIMIT = 64 * 1024;

const MULTI_TENANT_ALIASES = new Set(['common', 'organizations', 'consumers']);

/** Parses a form body, refusing a field given twice (which value would win is ambiguous). */
export function parseTokenForm(body: string): TokenParameters {
  const parameters = new Map<string, string>();
  for (const [name, value] of new URLSearchParams(body)) {
    if (parameters.has(name)) throw aad.duplicateParameter(name);
    parameters.set(name, value);
  }
  return parameters;
}

/** `Authorization: Basic base64(urlencode(id):urlencode(secret))` (RFC 6749 §2.3.1). */
function basicCredentials(header: string | undefined): { clientId: string; clientSecret: string } | undefined {
  const match = header && /^Basic +([A-Za-z0-9+/]+=*)$/i.exec(header.trim());
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  try {
    return { clientId: decodeURIComponent(decoded.slice(0, colon)), clientSecret: decodeURIComponent(decoded.slice(colon + 1)) };
  } catch {
    throw aad.malformedBody('The Basic authorization header is not URL-encoded.');
  }
}

/** The tenant of a discovery path: a known tenant's GUID, or `{tenantid}` for the multi-tenant aliases. */
/** The tenant segment of an ADFS authority, which MSAL trusts without instance discovery. */
export const ADFS_TENANT = 'adfs';

function discoveryTenant(directory: Directory, segment: string): string {
  const tenant = findTenant(directory, segment);
  if (tenant) return tenant.id;
  if (MULTI_TENANT_ALIASES.has(segment.toLowerCase())) return '{tenantid}';
  throw aad.unknownTenant(segment);
}

/**
 * The origin a client used (its Host header), so that discovery points it back
 * at the name it can reach (`localhost`, a container host name) rather than
 * the bound address; the bound origin when the header is absent or odd.
 */
function requestOrigin(request: FastifyRequest, bound: string): string {
  const host = request.headers.host;
  return typeof host === 'string' && /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/.test(host) ? `https://${host}` : bound;
}

/** `origin` is where this client reaches the server; the issuer string never depends on it. */
function openIdConfiguration(ctx: IssuerContext, origin: string, tenantId: string, version: 1 | 2) {
  const v2 = version === 2 ? '/v2.0' : '';
  return {
    token_endpoint: `${origin}/${tenantId}/oauth2${v2}/token`,
    token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
    jwks_uri: `${origin}/${tenantId}/discovery${v2}/keys`,
    response_modes_supported: ['query', 'fragment', 'form_post'],
    subject_types_supported: ['pairwise'],
    id_token_signing_alg_values_supported: ['RS256'],
    response_types_supported: ['code', 'id_token', 'code id_token', 'id_token token'],
    grant_types_supported: ['client_credentials'],
    scopes_supported: ['openid', 'profile', 'email', 'offline_access'],
    issuer: issuerFor(version, tenantId, ctx.issuerStyle, ctx.origin),
    request_uri_parameter_supported: false,
    authorization_endpoint: `${origin}/${tenantId}/oauth2${v2}/authorize`,
    end_session_endpoint: `${origin}/${tenantId}/oauth2${v2}/logout`,
    claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'nbf', 'oid', 'tid', 'roles', 'ver', version === 2 ? 'azp' : 'appid'],
    tenant_region_scope: null,
    cloud_instance_name: 'offcloud.localhost',
  };
}

export function registerIssuerRoutes(app: FastifyInstance, options: IssuerRoutesOptions): void {
  // Only form bodies are read; any other content type reads as no fields, so the
  // answer is the AAD "must contain parameter" error rather than a framework 415.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, parseTokenForm(body as string));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, _body, done) => done(null, new Map()));

  const discovery = (version: 1 | 2) => async (request: FastifyRequest<{ Params: { tenant: string } }>) => {
    const ctx = await options.context();
    return openIdConfiguration(ctx, requestOrigin(request, options.origin()), discoveryTenant(ctx.directory, request.params.tenant), version);
  };
  app.get('/:tenant/v2.0/.well-known/openid-configuration', discovery(2));
  app.get('/:tenant/.well-known/openid-configuration', discovery(1));
  // An ADFS-style authority (tenant `adfs`, as AZURE_TENANT_ID=adfs names it): the Azure SDKs skip
  // instance discovery for one, so an unmodified DefaultAzureCredential reaches this issuer with no
  // network. It stands for the default tenant, with the v2 endpoints.
  app.get(`/${ADFS_TENANT}/.well-known/openid-configuration`, async (request) => {
    const ctx = await options.context();
    return openIdConfiguration(ctx, requestOrigin(request, options.origin()), ctx.directory.defaultTenantId, 2);
  });

  const keys = async (request: FastifyRequest<{ Params: { tenant: string } }>) => {
    const ctx = await options.context();
    discoveryTenant(ctx.directory, request.params.tenant);
    return ctx.keys.jwks;
  };
  app.get('/:tenant/discovery/v2.0/keys', keys);
  app.get('/:tenant/discovery/keys', keys);

  // Instance discovery: this host is its own (only) cloud, so clients that do ask need no network.
  app.get('/:tenant/discovery/instance', async (request: FastifyRequest<{ Params: { tenant: string } }>) => {
    const origin = requestOrigin(request, options.origin());
    const host = new URL(origin).host;
    return {
      tenant_discovery_endpoint: `${origin}/${request.params.tenant.toLowerCase()}/v2.0/.well-known/openid-configuration`,
      'api-version': '1.1',
      metadata: [{ preferred_network: host, preferred_cache: host, aliases: [host] }],
    };
  });

  const token = (endpoint: 'v1' | 'v2') => async (request: FastifyRequest<{ Params: { tenant: string } }>, reply: FastifyReply) => {
    const parameters = request.body instanceof Map ? (request.body as TokenParameters) : new Map<string, string>();
    const basic = basicCredentials(request.headers.authorization);
    const ctx = await options.context();
    const issued = await issueClientCredentialsToken(ctx, { tenant: request.params.tenant, endpoint, parameters, ...(basic ? { basic } : {}) });
    options.tokensIssued.inc({ grant: 'client_credentials' });
    const lifetime = issued.expiresAt - issued.issuedAt;
    reply.header('cache-control', 'no-store, no-cache').header('pragma', 'no-cache');
    if (endpoint === 'v2') {
      return { token_type: 'Bearer', expires_in: lifetime, ext_expires_in: lifetime, access_token: issued.accessToken };
    }
    // The v1 endpoint answers numbers as strings and echoes the resource, as the real one.
    return {
      token_type: 'Bearer',
      expires_in: String(lifetime),
      ext_expires_in: String(lifetime),
      expires_on: String(issued.expiresAt),
      not_before: String(issued.issuedAt),
      resource: issued.resource,
      access_token: issued.accessToken,
    };
  };
  app.post('/:tenant/oauth2/v2.0/token', token('v2'));
  app.post('/:tenant/oauth2/token', token('v1'));
  app.route({
    method: ['GET', 'PUT', 'DELETE', 'PATCH'],
    url: '/:tenant/oauth2/*',
    handler: async (request) => {
      throw new AadError(400, 'invalid_request', 900561, `The endpoint only accepts POST requests. Received a ${request.method} request.`);
    },
  });

  app.setNotFoundHandler(async (request, reply) => sendWireAnswer(reply, toWireError(aad.unknownRoute(request.url.split('?')[0] ?? ''), request, 'issuer')));
  installErrorHandler(app, { logger: app.log, toWire: (error, request) => toWireError(error, request, 'issuer') });
}
