/**
 * Issuing access tokens: the client credentials grant (v2 and v1 endpoints,
 * §4.9) and managed identity tokens (§4.8). Plain functions over the
 * directory and the signing keys; the HTTP handlers only parse and answer.
 */
import { createPublicKey, randomBytes } from 'node:crypto';
import { decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose';
import {
  checkClientSecret,
  findClient,
  findManagedIdentity,
  findResource,
  findTenant,
  grantedRoleValues,
  type ApiRegistration,
  type ClientApplication,
  type Directory,
  type ManagedIdentitySelector,
  type Tenant,
} from './directory/index.ts';
import { aad, imds, ImdsError } from './errors.ts';
import { issuerFor, type IssuerStyle } from './issuer.ts';
import type { SigningKeySet } from './keys.ts';
import type { TokenSigner } from './signer.ts';
import type { AccessTokenClaims } from './verify.ts';

export interface IssuerContext {
  directory: Directory;
  keys: SigningKeySet;
  /** Signs the tokens, off the event loop. */
  signer: TokenSigner;
  issuerStyle: IssuerStyle;
  /** This server's HTTPS origin, for `--issuer-style local`. */
  origin: string;
  clientCredentialsLifetimeSeconds: number;
  managedIdentityLifetimeSeconds: number;
  /** Unix seconds; tests and benchmarks may pin it. */
  now?: () => number;
}

interface SignedToken {
  accessToken: string;
  issuedAt: number;
  expiresAt: number;
}

interface TokenSubject {
  tenantId: string;
  api: ApiRegistration;
  /** The resource as requested: the v1 `aud`. */
  requestedResource: string;
  clientAppId: string;
  /** "1" secret, "2" certificate or managed identity. */
  clientAuthMethod: '1' | '2';
  principalId: string;
  roles: string[];
  extra?: Partial<AccessTokenClaims>;
}

function nowSeconds(ctx: IssuerContext): number {
  return ctx.now ? ctx.now() : Math.floor(Date.now() / 1000);
}

/** Builds and signs an app-only access token shaped as the API's accessTokenAcceptedVersion says (reference §4.2). */
async function signAccessToken(ctx: IssuerContext, subject: TokenSubject, lifetime: number): Promise<SignedToken> {
  const v2 = subject.api.accessTokenAcceptedVersion === 2;
  const iat = nowSeconds(ctx);
  const exp = iat + lifetime;
  const iss = issuerFor(v2 ? 2 : 1, subject.tenantId, ctx.issuerStyle, ctx.origin);
  const claims: Record<string, unknown> = {
    aud: v2 ? subject.api.appId : subject.requestedResource,
    iss,
    iat,
    nbf: iat,
    exp,
    ...(v2 ? { azp: subject.clientAppId, azpacr: subject.clientAuthMethod } : { appid: subject.clientAppId, appidacr: subject.clientAuthMethod, idp: iss }),
    idtyp: 'app',
    oid: subject.principalId,
    ...(subject.roles.length ? { roles: subject.roles } : {}),
    sub: subject.principalId,
    tid: subject.tenantId,
    uti: randomBytes(16).toString('base64url'),
    ver: v2 ? '2.0' : '1.0',
    ...subject.extra,
  };
  const key = ctx.keys.active;
  // v1 tokens carry both kid and x5t in the header, v2 tokens kid only, as the real issuer's.
  const header = { alg: 'RS256', typ: 'JWT', kid: key.kid, ...(v2 ? {} : { x5t: key.kid }) };
  const accessToken = await ctx.signer.sign(key, header, claims);
  return { accessToken, issuedAt: iat, expiresAt: exp };
}

/** The form fields of a token request, each given at most once. */
export type TokenParameters = ReadonlyMap<string, string>;

export interface ClientCredentialsRequest {
  /** The tenant path segment: GUID or domain, any case. */
  tenant: string;
  endpoint: 'v1' | 'v2';
  parameters: TokenParameters;
  /** Client id and secret from an HTTP Basic header, when one was sent. */
  basic?: { clientId: string; clientSecret: string };
}

export interface ClientCredentialsToken extends SignedToken {
  /** The resource as requested (v1 responses echo it). */
  resource: string;
}

function required(parameters: TokenParameters, name: string): string {
  const value = parameters.get(name);
  if (value === undefined || value === '') throw aad.missingParameter(name);
  return value;
}

/** `scope` of a client credentials request: exactly one `<resource>/.default`. */
function resourceFromScope(scope: string): string {
  const scopes = scope.split(/\s+/).filter(Boolean);
  if (scopes.length !== 1) throw aad.invalidScope(scope);
  const [only] = scopes as [string];
  if (!only.endsWith('/.default')) throw aad.scopeWithoutDefault(only);
  const resource = only.slice(0, -'/.default'.length);
  if (resource === '') throw aad.invalidScope(only);
  return resource;
}

function resolveTenant(directory: Directory, segment: string): Tenant {
  const tenant = findTenant(directory, segment);
  if (!tenant) throw aad.unknownTenant(segment);
  return tenant;
}

/**
 * The client credentials grant: checks the client and its secret, the
 * resource, the role grants (when the API requires one), and signs a token
 * with the granted role values in `roles`. The `audience` field of the spec's
 * request and every unknown field are accepted and ignored.
 */
export async function issueClientCredentialsToken(ctx: IssuerContext, request: ClientCredentialsRequest): Promise<ClientCredentialsToken> {
  const { parameters } = request;
  const tenant = resolveTenant(ctx.directory, request.tenant);
  const grantType = required(parameters, 'grant_type');
  if (grantType !== 'client_credentials') throw aad.unsupportedGrantType(grantType);
  const clientId = parameters.get('client_id') || request.basic?.clientId || '';
  if (!clientId) throw aad.missingParameter('client_id');
  const resource = request.endpoint === 'v2' ? resourceFromScope(required(parameters, 'scope')) : required(parameters, 'resource');

  const client = findClient(ctx.directory, tenant.id, clientId);
  if (!client) throw aad.unknownClient(clientId, tenant.id);
  const clientAuthMethod = await authenticateClient(ctx, client, tenant, request);

  const api = findResource(ctx.directory, tenant.id, resource);
  if (!api) throw aad.unknownResource(resource, tenant.id);
  const roles = grantedRoleValues(ctx.directory, client.servicePrincipalId, api);
  if (api.appRoleAssignmentRequired && roles.length === 0) {
    throw aad.roleNotAssigned(client.appId, client.displayName, api.appId, api.displayName);
  }
  const signed = await signAccessToken(
    ctx,
    {
      tenantId: tenant.id,
      api,
      requestedResource: resource,
      clientAppId: client.appId,
      clientAuthMethod,
      principalId: client.servicePrincipalId,
      roles,
    },
    ctx.clientCredentialsLifetimeSeconds,
  );
  return { ...signed, resource };
}

const JWT_BEARER_ASSERTION = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/**
 * The token endpoint URLs a client assertion may be addressed to: this
 * server's and the real cloud's, v2 and v1, with the tenant GUID or domain.
 */
function assertionAudiences(ctx: IssuerContext, tenant: Tenant): string[] {
  const names = [tenant.id, ...(tenant.domain ? [tenant.domain] : [])];
  return [ctx.origin, 'https://login.microsoftonline.com'].flatMap((origin) =>
    names.flatMap((name) => [`${origin}/${name}/oauth2/v2.0/token`, `${origin}/${name}/oauth2/token`]),
  );
}

/**
 * Checks a client assertion (private_key_jwt, RFC 7523): signed by the key
 * of a certificate registered on the client and named by its `x5t#S256` or
 * `x5t` header, `iss` = `sub` = the client id, `aud` = this token endpoint,
 * within its lifetime.
 */
async function checkClientAssertion(ctx: IssuerContext, client: ClientApplication, tenant: Tenant, assertion: string): Promise<void> {
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(assertion);
  } catch {
    throw aad.invalidAssertion('The client assertion is not a well-formed JWT.');
  }
  const sha256 = header['x5t#S256'];
  const certificate = client.certificates.find((c) => (typeof sha256 === 'string' ? c.thumbprintSha256 === sha256 : c.thumbprint === header.x5t));
  if (!certificate) throw aad.unknownCertificate(client.appId);
  const now = nowSeconds(ctx);
  if (Date.parse(certificate.expiresAt) < now * 1000) throw aad.invalidAssertion('The certificate used to sign the client assertion has expired.');
  try {
    await jwtVerify(assertion, createPublicKey(certificate.certificate), {
      algorithms: ['RS256', 'PS256'],
      issuer: client.appId,
      subject: client.appId,
      audience: assertionAudiences(ctx, tenant),
      currentDate: new Date(now * 1000),
      clockTolerance: 300,
      requiredClaims: ['exp'],
    });
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired) throw aad.assertionLifetime();
    if (err instanceof joseErrors.JWTClaimValidationFailed) {
      if (err.claim === 'nbf') throw aad.assertionLifetime();
      throw aad.invalidAssertion(`The client assertion's '${err.claim}' claim is not valid for this client and endpoint.`);
    }
    throw aad.invalidAssertion('Client assertion failed signature validation.');
  }
}

/** The client's proof: a secret ("1") or a certificate-signed assertion ("2"), the `appidacr`/`azpacr` value. */
async function authenticateClient(ctx: IssuerContext, client: ClientApplication, tenant: Tenant, request: ClientCredentialsRequest): Promise<'1' | '2'> {
  const assertion = request.parameters.get('client_assertion');
  if (assertion !== undefined) {
    if (request.parameters.get('client_assertion_type') !== JWT_BEARER_ASSERTION) throw aad.missingParameter('client_assertion_type');
    await checkClientAssertion(ctx, client, tenant, assertion);
    return '2';
  }
  const secret = request.parameters.get('client_secret') || request.basic?.clientSecret || '';
  if (!secret) throw aad.missingCredential();
  const check = checkClientSecret(client, secret, new Date(nowSeconds(ctx) * 1000));
  if (!check.ok) throw check.reason === 'expired' ? aad.expiredSecret(client.appId) : aad.invalidSecret(client.appId);
  return '1';
}

export interface ManagedIdentityRequest {
  resource: string;
  selector: ManagedIdentitySelector;
}

export interface ManagedIdentityToken extends SignedToken {
  resource: string;
  clientId: string;
}

/**
 * A token for this machine's managed identity (system-assigned, or the
 * user-assigned one selected by client id, object id or resource id). Tokens
 * for the well-known resources are v1-shaped, as the real service issues them.
 */
export async function issueManagedIdentityToken(ctx: IssuerContext, request: ManagedIdentityRequest): Promise<ManagedIdentityToken> {
  const identity = findManagedIdentity(ctx.directory, request.selector);
  if (!identity) throw imds.identityNotFound();
  const api = findResource(ctx.directory, identity.tenantId, request.resource);
  if (!api) throw imds.unknownResource(request.resource, identity.tenantId);
  const roles = grantedRoleValues(ctx.directory, identity.principalId, api);
  if (api.appRoleAssignmentRequired && roles.length === 0) {
    const refused = aad.roleNotAssigned(identity.clientId, identity.name, api.appId, api.displayName);
    throw new ImdsError(400, refused.error, refused.message);
  }
  const signed = await signAccessToken(
    ctx,
    {
      tenantId: identity.tenantId,
      api,
      requestedResource: request.resource,
      clientAppId: identity.clientId,
      clientAuthMethod: '2',
      principalId: identity.principalId,
      roles,
      extra: { xms_mirid: identity.resourceId },
    },
    ctx.managedIdentityLifetimeSeconds,
  );
  return { ...signed, resource: request.resource, clientId: identity.clientId };
}
