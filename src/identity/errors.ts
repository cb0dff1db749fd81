/**
 * The identity component's one wire-error mapping. The token endpoint answers
 * the Entra ID JSON error shape (`error`, `error_description` starting with
 * the AADSTS code, `error_codes`, ids, timestamp) with 400 or 401 only, since
 * a 429, a 5xx or a Retry-After header would make MSAL throttle the request
 * and the identity SDK retry it. The managed identity endpoint answers the
 * IMDS shape (`error`, `error_description`) with 400, never 404/410, which
 * the SDK would retry for a minute.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { clientErrorStatus, WireError, type WireAnswer } from '../common/errors.ts';
import type { TokenVerificationError } from './verify.ts';

/** An error of the token endpoint, discovery or instance discovery. */
export class AadError extends WireError {
  constructor(
    status: 400 | 401,
    readonly error: string,
    readonly aadsts: number,
    readonly description: string,
  ) {
    super(status, `AADSTS${aadsts}`, `AADSTS${aadsts}: ${description}`);
  }
}

/** An error of the managed identity endpoints (IMDS and App Service form). */
export class ImdsError extends WireError {
  constructor(
    status: 400 | 401,
    readonly error: string,
    readonly description: string,
  ) {
    super(status, error, description);
  }
}

export const aad = {
  missingParameter: (name: string) => new AadError(400, 'invalid_request', 900144, `The request body must contain the following parameter: '${name}'.`),
  duplicateParameter: (name: string) =>
    new AadError(400, 'invalid_request', 9002313, `Invalid request. Request is malformed or invalid. The parameter '${name}' is duplicated.`),
  malformedBody: (why: string) => new AadError(400, 'invalid_request', 9002313, `Invalid request. Request is malformed or invalid. ${why}`),
  unknownTenant: (tenant: string) =>
    new AadError(
      400,
      'invalid_request',
      90002,
      `Tenant '${tenant}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.`,
    ),
  unsupportedGrantType: (grant: string) =>
    new AadError(400, 'unsupported_grant_type', 70003, `The app requested an unsupported grant type '${grant}'. This issuer supports client_credentials.`),
  unknownClient: (clientId: string, tenant: string) =>
    new AadError(
      400,
      'unauthorized_client',
      700016,
      `Application with identifier '${clientId}' was not found in the directory '${tenant}'. This can happen if the application has not been installed by the administrator of the tenant or consented to by any user in the tenant.`,
    ),
  missingCredential: () =>
    new AadError(401, 'invalid_client', 7000218, "The request body must contain the following parameter: 'client_assertion' or 'client_secret'."),
  invalidAssertion: (why: string) => new AadError(401, 'invalid_client', 700027, why),
  unknownCertificate: (clientId: string) =>
    new AadError(
      401,
      'invalid_client',
      700027,
      `The certificate with the identifier used to sign the client assertion is not registered on application '${clientId}'.`,
    ),
  assertionLifetime: () => new AadError(401, 'invalid_client', 700024, 'Client assertion is not within its valid time range.'),
  invalidSecret: (clientId: string) =>
    new AadError(
      401,
      'invalid_client',
      7000215,
      `Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '${clientId}'.`,
    ),
  expiredSecret: (clientId: string) =>
    new AadError(
      401,
      'invalid_client',
      7000222,
      `The provided client secret keys for app '${clientId}' are expired. Create new keys for your app, or consider using certificate credentials for added security.`,
    ),
  scopeWithoutDefault: (scope: string) =>
    new AadError(
      400,
      'invalid_scope',
      1002012,
      `The provided value for scope ${scope} is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI).`,
    ),
  invalidScope: (scope: string) =>
    new AadError(
      400,
      'invalid_scope',
      70011,
      `The provided request must include a 'scope' input parameter. The provided value for the input parameter 'scope' is not valid. The scope ${scope} is not valid.`,
    ),
  unknownResource: (resource: string, tenant: string) =>
    new AadError(
      400,
      'invalid_resource',
      500011,
      `The resource principal named ${resource} was not found in the tenant named ${tenant}. This can happen if the application has not been installed by the administrator of the tenant or consented to by any user in the tenant. You might have sent your authentication request to the wrong tenant.`,
    ),
  roleNotAssigned: (clientId: string, clientName: string, apiId: string, apiName: string) =>
    new AadError(
      400,
      'invalid_grant',
      501051,
      `Application '${clientId}'(${clientName}) is not assigned to a role for the application '${apiId}'(${apiName}).`,
    ),
  unknownRoute: (path: string) =>
    new AadError(400, 'invalid_request', 900561, `The endpoint only accepts the documented methods and paths; ${path} is not one of them.`),
};

export const imds = {
  missingMetadataHeader: () => new ImdsError(400, 'invalid_request', 'Required metadata header not specified'),
  forwardedRequest: (header: string) => new ImdsError(400, 'invalid_request', `Request contains ${header} header`),
  missingParameter: (name: string) => new ImdsError(400, 'invalid_request', `Required query variable '${name}' is missing`),
  unsupportedApiVersion: (version: string) => new ImdsError(400, 'invalid_request', `Unsupported api-version '${version}'`),
  unknownResource: (resource: string, tenant: string) =>
    new ImdsError(400, 'invalid_resource', `AADSTS500011: The resource principal named ${resource} was not found in the tenant named ${tenant}.`),
  identityNotFound: () => new ImdsError(400, 'invalid_request', 'Identity not found'),
  duplicateParameter: (name: string) => new ImdsError(400, 'invalid_request', `Query variable '${name}' is given more than once`),
  wrongIdentityHeader: () => new ImdsError(401, 'invalid_request', 'The X-IDENTITY-HEADER header is missing or does not match IDENTITY_HEADER'),
  unknownRoute: () => new ImdsError(400, 'invalid_request', 'Unknown endpoint; tokens are at GET /metadata/identity/oauth2/token'),
};

/** "2016-01-09 02:02:12Z", the format of AAD's `timestamp`. */
function aadTimestamp(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace('T', ' ')}Z`;
}

function correlationIdOf(request: FastifyRequest): string {
  const fromQuery = (request.query as Record<string, unknown> | undefined)?.['client-request-id'];
  const fromHeader = request.headers['client-request-id'] ?? request.headers['x-ms-client-request-id'];
  const given = typeof fromQuery === 'string' ? fromQuery : typeof fromHeader === 'string' ? fromHeader : '';
  return /^[0-9a-f-]{36}$/i.test(given) ? given : randomUUID();
}

function aadAnswer(request: FastifyRequest, err: AadError): WireAnswer {
  const traceId = randomUUID();
  const correlationId = correlationIdOf(request);
  const timestamp = aadTimestamp(new Date());
  return {
    status: err.status,
    headers: { 'cache-control': 'no-store, no-cache' },
    body: {
      error: err.error,
      error_description: `${err.message} Trace ID: ${traceId} Correlation ID: ${correlationId} Timestamp: ${timestamp}`,
      error_codes: [err.aadsts],
      timestamp,
      trace_id: traceId,
      correlation_id: correlationId,
      error_uri: `https://login.microsoftonline.com/error?code=${err.aadsts}`,
    },
  };
}

/**
 * The one mapping, in the shape of the endpoint the request came to: the
 * token issuer's Entra ID errors or the managed identity endpoint's. Neither
 * ever answers 5xx (see the top of this file).
 */
export function toWireError(error: unknown, request: FastifyRequest, endpoint: 'issuer' | 'imds'): WireAnswer {
  const unexpected = clientErrorStatus(error) === undefined;
  if (endpoint === 'issuer') {
    if (error instanceof AadError) return aadAnswer(request, error);
    if (unexpected) return aadAnswer(request, new AadError(400, 'temporarily_unavailable', 90033, 'The request could not be completed; see the issuer log.'));
    return aadAnswer(request, aad.malformedBody((error as Error).message));
  }
  const imdsError =
    error instanceof ImdsError
      ? error
      : new ImdsError(400, 'invalid_request', unexpected ? 'The token could not be issued; see the server log.' : (error as Error).message);
  return { status: imdsError.status, body: { error: imdsError.error, error_description: imdsError.description } };
}

/**
 * A protected API's answer to a rejected token (RFC 6750): 401 with a
 * `WWW-Authenticate: Bearer error="invalid_token"` challenge, or 403
 * `insufficient_scope` when the token is valid but lacks a required role.
 */
export function sendBearerError(reply: FastifyReply, err: TokenVerificationError): FastifyReply {
  const forbidden = err.code === 'missing_role';
  const error = forbidden ? 'insufficient_scope' : 'invalid_token';
  const description = err.detail.replace(/["\\]/g, "'");
  return reply
    .code(forbidden ? 403 : 401)
    .header('www-authenticate', `Bearer error="${error}", error_description="${description}"`)
    .send({ error, error_description: err.detail, code: err.code });
}
