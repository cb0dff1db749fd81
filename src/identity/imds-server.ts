/**
 * The managed identity endpoints over plain HTTP, as on a real VM (§4.8):
 * IMDS `GET /metadata/identity/oauth2/token` (header `Metadata: true`,
 * api-version 2018-02-01 or later), and the App Service form
 * `GET /msi/token` (header `X-IDENTITY-HEADER`, api-version 2019-08-01).
 * The SDK lower-cases the URL, appends `/` and, with a trailing `/` on
 * AZURE_POD_IDENTITY_AUTHORITY_HOST, doubles the leading one (reference
 * §2.1), so paths are compared after collapsing slashes.
 */
import type { Counter } from 'prom-client';
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { installErrorHandler, sendWireAnswer } from '../common/http.ts';
import type { ManagedIdentitySelector } from './directory/index.ts';
import { imds, toWireError } from './errors.ts';
import { issueManagedIdentityToken, type IssuerContext } from './tokens.ts';

export const IMDS_TOKEN_PATH = '/metadata/identity/oauth2/token';
export const APP_SERVICE_TOKEN_PATH = '/msi/token';
/** The first IMDS api-version with managed identity tokens (§9); later dates are accepted too. */
const FIRST_IMDS_API_VERSION = '2018-02-01';
const APP_SERVICE_API_VERSION = '2019-08-01';

export interface ImdsRoutesOptions {
  context(): Promise<IssuerContext>;
  /** The App Service `IDENTITY_HEADER` value. */
  identityHeader: string;
  /** Counts each token handed out, by grant. */
  tokensIssued: Counter<'grant'>;
}

function normalizePath(rawUrl: string): string {
  const path = rawUrl.split('?')[0] ?? '';
  return path
    .replace(/\/{2,}/g, '/')
    .replace(/(.)\/$/, '$1')
    .toLowerCase();
}

/** Query fields, each given at most once. */
function queryOf(rawUrl: string): Map<string, string> {
  const at = rawUrl.indexOf('?');
  const query = new Map<string, string>();
  if (at < 0) return query;
  for (const [name, value] of new URLSearchParams(rawUrl.slice(at + 1))) {
    if (query.has(name)) throw imds.duplicateParameter(name);
    query.set(name, value);
  }
  return query;
}

function requiredQuery(query: Map<string, string>, name: string): string {
  const value = query.get(name);
  if (value === undefined || value === '') throw imds.missingParameter(name);
  return value;
}

function selectorOf(query: Map<string, string>, resourceIdNames: string[]): ManagedIdentitySelector {
  const resourceId = resourceIdNames.map((n) => query.get(n)).find((v) => v !== undefined);
  const clientId = query.get('client_id');
  const objectId = query.get('object_id') ?? query.get('principal_id');
  return {
    ...(clientId !== undefined ? { clientId } : {}),
    ...(objectId !== undefined ? { objectId } : {}),
    ...(resourceId !== undefined ? { resourceId } : {}),
  };
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The headers a proxy adds to name the client it relays for: the real IMDS refuses
 * X-Forwarded-For; Forwarded (RFC 7239) is its standard form, refused alike.
 */
const RELAY_HEADERS = ['X-Forwarded-For', 'Forwarded'];

export function registerImdsRoutes(app: FastifyInstance, options: ImdsRoutesOptions): void {
  /** IMDS: answers exactly the §2.6 fields, every number as a string. */
  async function imdsToken(request: FastifyRequest) {
    if (String(request.headers.metadata ?? '').toLowerCase() !== 'true') throw imds.missingMetadataHeader();
    // As the real IMDS: a request relayed by a proxy is refused (a guard against request forgery).
    const relayedBy = RELAY_HEADERS.find((name) => request.headers[name.toLowerCase()] !== undefined);
    if (relayedBy) throw imds.forwardedRequest(relayedBy);
    const query = queryOf(request.url);
    const apiVersion = requiredQuery(query, 'api-version');
    if (!/^\d{4}-\d{2}-\d{2}$/.test(apiVersion) || apiVersion < FIRST_IMDS_API_VERSION) throw imds.unsupportedApiVersion(apiVersion);
    const resource = requiredQuery(query, 'resource');
    const issued = await issueManagedIdentityToken(await options.context(), {
      resource,
      selector: selectorOf(query, ['msi_res_id', 'mi_res_id']),
    });
    options.tokensIssued.inc({ grant: 'managed_identity' });
    return {
      access_token: issued.accessToken,
      refresh_token: '',
      expires_in: String(issued.expiresAt - issued.issuedAt),
      expires_on: String(issued.expiresAt),
      not_before: String(issued.issuedAt),
      resource: issued.resource,
      token_type: 'Bearer',
    };
  }

  /** App Service (2019-08-01): `expires_on` as a Unix-time string, plus `client_id`. */
  async function appServiceToken(request: FastifyRequest) {
    const header = request.headers['x-identity-header'];
    if (typeof header !== 'string' || !sameSecret(header, options.identityHeader)) throw imds.wrongIdentityHeader();
    const query = queryOf(request.url);
    const apiVersion = requiredQuery(query, 'api-version');
    if (apiVersion !== APP_SERVICE_API_VERSION) throw imds.unsupportedApiVersion(apiVersion);
    const resource = requiredQuery(query, 'resource');
    const issued = await issueManagedIdentityToken(await options.context(), {
      resource,
      selector: selectorOf(query, ['mi_res_id', 'msi_res_id']),
    });
    options.tokensIssued.inc({ grant: 'managed_identity' });
    return {
      access_token: issued.accessToken,
      expires_on: String(issued.expiresAt),
      resource: issued.resource,
      token_type: 'Bearer',
      client_id: issued.clientId,
    };
  }

  // One catch-all route: paths are matched after normalising, which the router cannot do.
  app.get('/*', async (request: FastifyRequest) => {
    const path = normalizePath(request.url);
    if (path === IMDS_TOKEN_PATH) return imdsToken(request);
    if (path === APP_SERVICE_TOKEN_PATH) return appServiceToken(request);
    throw imds.unknownRoute();
  });
  app.setNotFoundHandler(async (request, reply) => sendWireAnswer(reply, toWireError(imds.unknownRoute(), request, 'imds')));
  installErrorHandler(app, { logger: app.log, toWire: (error, request) => toWireError(error, request, 'imds') });
}
