/**
 * The directory: tenants, API registrations with their app roles, client
 * applications with hashed secrets, app role assignments, managed identities
 * and data-plane role assignments (what storage reads). It lives in one JSON
 * or YAML file, by default <data-dir>/identity/directory.json, written
 * atomically; readers reload it when it changes, so CLI edits reach a running
 * server without a restart.
 */
import { createHash, randomBytes, randomUUID, timingSafeEqual, X509Certificate } from 'node:crypto';
import { hostname } from 'node:os';
import { readFile } from 'node:fs/promises';
import { dirname, extname, resolve } from 'node:path';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ConfigError } from '../common/errors.ts';
import { writeFileAtomic } from '../common/files.ts';
import { createFileExclusive, FollowedFile } from './followed-file.ts';

/** Token shape a resource accepts: null and 1 give v1 tokens, 2 gives v2 tokens (§2.7). */
export type AccessTokenVersion = 1 | 2 | null;

export interface Tenant {
  /** Lower-case GUID. */
  id: string;
  /** Optional verified domain, e.g. `offcloud.onmicrosoft.com`; matched case-insensitively. */
  domain: string | null;
}

export interface AppRole {
  id: string;
  /** What the `roles` claim carries. */
  value: string;
  displayName: string;
  description: string;
  allowedMemberTypes: string[];
  isEnabled: boolean;
}

/** An API (resource) registration, or a well-known resource principal such as storage. */
export interface ApiRegistration {
  appId: string;
  displayName: string;
  tenantId: string;
  servicePrincipalId: string;
  identifierUris: string[];
  appRoles: AppRole[];
  accessTokenAcceptedVersion: AccessTokenVersion;
  /** When true, a client without a granted role gets no token (AADSTS501051), as the real setting. */
  appRoleAssignmentRequired: boolean;
}

export interface ClientSecret {
  keyId: string;
  /** First three characters of the value, as the portal shows. */
  hint: string;
  salt: string;
  /** sha256(salt ‖ value), hex. */
  hash: string;
  createdAt: string;
  expiresAt: string;
}

export interface ClientApplication {
  appId: string;
  displayName: string;
  tenantId: string;
  /** Object id of the client's service principal: the token's `oid` and `sub`. */
  servicePrincipalId: string;
  secrets: ClientSecret[];
  /** Certificates whose keys may sign client assertions (private_key_jwt). */
  certificates: ClientCertificate[];
}

/** A client's public certificate, found by the thumbprint in a client assertion's header. */
export interface ClientCertificate {
  keyId: string;
  /** base64url SHA-1 of the DER certificate: the `x5t` header. */
  thumbprint: string;
  /** base64url SHA-256 of the DER certificate: the `x5t#S256` header. */
  thumbprintSha256: string;
  /** PEM. */
  certificate: string;
  /** The certificate's notAfter. */
  expiresAt: string;
}

/** A client (or managed identity) principal granted one app role of an API. */
export interface AppRoleAssignment {
  principalId: string;
  resourceAppId: string;
  appRoleId: string;
}

export interface ManagedIdentity {
  kind: 'system' | 'user';
  name: string;
  clientId: string;
  /** Object id: the token's `oid`. */
  principalId: string;
  /** ARM-style resource id: `msi_res_id` selects by it; the token's `xms_mirid`. */
  resourceId: string;
  tenantId: string;
}

/** Data-plane roles of storage, named as the real built-in roles. */
export const DATA_ROLES = [
  'Storage Blob Data Reader',
  'Storage Blob Data Contributor',
  'Storage Blob Data Owner',
] as const;
export type DataRole = (typeof DATA_ROLES)[number];

/** A data-plane role of a principal (service principal or managed identity object id) on a scope. */
export interface DataRoleAssignment {
  principalId: string;
  role: DataRole;
  /** `*` (everything), or a path such as `/storage/devstoreaccount1` or `/storage/devstoreaccount1/photos`. */
  scope: string;
}

export interface Directory {
  version: 1;
  defaultTenantId: string;
  /** Subscription GUID used in managed identity resource ids. */
  subscriptionId: string;
  tenants: Tenant[];
  apis: ApiRegistration[];
  clients: ClientApplication[];
  appRoleAssignments: AppRoleAssignment[];
  managedIdentities: ManagedIdentity[];
  dataRoleAssignments: DataRoleAssignment[];
}

/** The storage account every data dir has. */
export const DEFAULT_STORAGE_ACCOUNT = 'devstoreaccount1';

/** Well-known first-party resources with their real application ids; they exist in every tenant. */
export const WELL_KNOWN_RESOURCES: readonly ApiRegistration[] = [
  wellKnown('e406a681-f3d4-42a8-90b6-c2b029497af1', 'Azure Storage', ['https://storage.azure.com']),
  wellKnown('797f4846-ba00-4fd7-ba43-dac1f8f63013', 'Windows Azure Service Management API', [
    'https://management.azure.com',
    'https://management.core.windows.net',
  ]),
  wellKnown('cfa8b339-82a2-471a-a3c9-0fc0be7a4093', 'Azure Key Vault', ['https://vault.azure.net']),
];
export const STORAGE_RESOURCE = WELL_KNOWN_RESOURCES[0]!;

function wellKnown(appId: string, displayName: string, identifierUris: string[]): ApiRegistration {
  return {
    appId,
    displayName,
    tenantId: '*',
    servicePrincipalId: appId,
    identifierUris,
    appRoles: [],
    accessTokenAcceptedVersion: null,
    appRoleAssignmentRequired: false,
  };
}

export const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function newId(): string {
  return randomUUID();
}

// ---------------------------------------------------------------- secrets

/** Default lifetime of a new secret, as the portal's recommended 180 days. */
export const DEFAULT_SECRET_DAYS = 180;

function hashSecret(salt: string, value: string): string {
  return createHash('sha256').update(salt).update(value, 'utf8').digest('hex');
}

/**
 * Makes a secret: the value (shown once) and the stored record. Values are 40
 * random characters, so a salted SHA-256 is as strong as a slow KDF here and
 * keeps the token endpoint fast.
 */
export function createClientSecret(days = DEFAULT_SECRET_DAYS, now = new Date()): { value: string; record: ClientSecret } {
  const value = randomBytes(30).toString('base64url');
  return { value, record: secretRecord(value, new Date(now.getTime() + days * 86_400_000), now) };
}

function secretRecord(value: string, expiresAt: Date, now: Date): ClientSecret {
  const salt = randomBytes(16).toString('hex');
  return {
    keyId: newId(),
    hint: value.slice(0, 3),
    salt,
    hash: hashSecret(salt, value),
    createdAt: now.toISOString(),
    expiresAt: expiresAt.toISOString(),
  };
}

/** Reads a PEM certificate into the record a client keeps; `where` names it in errors. */
export function clientCertificate(pem: string, where: string): ClientCertificate {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(pem);
  } catch (err) {
    throw new ConfigError(`${where} is not a PEM certificate: ${(err as Error).message}`);
  }
  const der = certificate.raw;
  return {
    keyId: createHash('sha256').update(der).digest('hex').slice(0, 32).replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-'),
    thumbprint: createHash('sha1').update(der).digest('base64url'),
    thumbprintSha256: createHash('sha256').update(der).digest('base64url'),
    certificate: certificate.toString(),
    expiresAt: new Date(certificate.validTo).toISOString(),
  };
}

export type SecretCheck = { ok: true; secret: ClientSecret } | { ok: false; reason: 'invalid' | 'expired' };

/** Compares a presented secret with every stored one in constant time. */
export function checkClientSecret(client: ClientApplication, value: string, now = new Date()): SecretCheck {
  let expiredMatch = false;
  for (const secret of client.secrets) {
    const expected = Buffer.from(secret.hash, 'hex');
    const given = Buffer.from(hashSecret(secret.salt, value), 'hex');
    if (expected.length === given.length && timingSafeEqual(expected, given)) {
      if (Date.parse(secret.expiresAt) > now.getTime()) return { ok: true, secret };
      expiredMatch = true;
    }
  }
  return { ok: false, reason: expiredMatch ? 'expired' : 'invalid' };
}

// ---------------------------------------------------------------- lookups

export function findTenant(directory: Directory, segment: string): Tenant | undefined {
  const wanted = segment.toLowerCase();
  return directory.tenants.find((t) => t.id === wanted || (t.domain !== null && t.domain.toLowerCase() === wanted));
}

/** URIs compare case-insensitively and without a trailing slash, as `https://storage.azure.com/` names storage too. */
function sameResourceUri(a: string, b: string): boolean {
  return a.replace(/\/+$/, '').toLowerCase() === b.replace(/\/+$/, '').toLowerCase();
}

/** The API a resource identifier (application id URI or application id GUID) names in a tenant. */
export function findResource(directory: Directory, tenantId: string, identifier: string): ApiRegistration | undefined {
  const candidates = [...directory.apis.filter((a) => a.tenantId === tenantId), ...WELL_KNOWN_RESOURCES];
  return candidates.find(
    (api) => api.appId === identifier.toLowerCase() || api.identifierUris.some((uri) => sameResourceUri(uri, identifier)),
  );
}

export function findClient(directory: Directory, tenantId: string, appId: string): ClientApplication | undefined {
  const wanted = appId.toLowerCase();
  return directory.clients.find((c) => c.tenantId === tenantId && c.appId === wanted);
}

export function findApi(directory: Directory, appId: string): ApiRegistration | undefined {
  const wanted = appId.toLowerCase();
  return directory.apis.find((a) => a.appId === wanted);
}

export interface ManagedIdentitySelector {
  clientId?: string;
  objectId?: string;
  resourceId?: string;
}

/** The system-assigned identity when nothing is selected; otherwise the user-assigned one named. */
export function findManagedIdentity(directory: Directory, selector: ManagedIdentitySelector): ManagedIdentity | undefined {
  const { clientId, objectId, resourceId } = selector;
  if (clientId === undefined && objectId === undefined && resourceId === undefined) {
    return directory.managedIdentities.find((m) => m.kind === 'system');
  }
  return directory.managedIdentities.find(
    (m) =>
      (clientId === undefined || m.clientId === clientId.toLowerCase()) &&
      (objectId === undefined || m.principalId === objectId.toLowerCase()) &&
      (resourceId === undefined || m.resourceId.toLowerCase() === resourceId.toLowerCase()),
  );
}

/** Values of the enabled app roles of `api` granted to `principalId`, in the API's role order. */
export function grantedRoleValues(directory: Directory, principalId: string, api: ApiRegistration): string[] {
  const granted = new Set(
    directory.appRoleAssignments
      .filter((a) => a.principalId === principalId && a.resourceAppId === api.appId)
      .map((a) => a.appRoleId),
  );
  return api.appRoles.filter((r) => r.isEnabled && granted.has(r.id)).map((r) => r.value);
}

/** True when `scope` covers `target`: `*`, equal, or a parent path at a `/` boundary. */
export function scopeCovers(scope: string, target: string): boolean {
  if (scope === '*' || scope === '/') return true;
  const base = scope.replace(/\/+$/, '');
  return target === base || target.startsWith(`${base}/`);
}

/**
 * The data-plane role assignments of a principal (by object id) that apply to
 * `target` (e.g. `/storage/devstoreaccount1/photos`); all of them when no target is given.
 */
export function dataRoleAssignmentsFor(directory: Directory, principalId: string, target?: string): DataRoleAssignment[] {
  const wanted = principalId.toLowerCase();
  return directory.dataRoleAssignments.filter(
    (a) => a.principalId === wanted && (target === undefined || scopeCovers(a.scope, target)),
  );
}

// ---------------------------------------------------------------- seed

export interface SeedResult {
  directory: Directory;
  /** The demo client's secret: shown once, never stored in clear. */
  demoClientSecret: string;
}

/** What a first start creates: a tenant, a demo API with one role, a client granted it, the system identity. */
export function seedDirectory(now = new Date()): SeedResult {
  const tenantId = newId();
  const subscriptionId = newId();
  const roleId = newId();
  const api: ApiRegistration = {
    appId: newId(),
    displayName: 'offcloud demo API',
    tenantId,
    servicePrincipalId: newId(),
    identifierUris: ['api://offcloud-demo-api'],
    appRoles: [
      {
        id: roleId,
        value: 'Demo.Read.All',
        displayName: 'Read all demo data',
        description: 'Apps holding this role may read every demo resource.',
        allowedMemberTypes: ['Application'],
        isEnabled: true,
      },
    ],
    accessTokenAcceptedVersion: 2,
    appRoleAssignmentRequired: true,
  };
  const secret = createClientSecret(DEFAULT_SECRET_DAYS, now);
  const client: ClientApplication = {
    appId: newId(),
    displayName: 'offcloud demo client',
    tenantId,
    servicePrincipalId: newId(),
    secrets: [secret.record],
    certificates: [],
  };
  const system: ManagedIdentity = {
    kind: 'system',
    name: hostname() || 'offcloud',
    clientId: newId(),
    principalId: newId(),
    resourceId: `/subscriptions/${subscriptionId}/resourceGroups/offcloud/providers/Microsoft.Compute/virtualMachines/${hostname() || 'offcloud'}`,
    tenantId,
  };
  const storageScope = `/storage/${DEFAULT_STORAGE_ACCOUNT}`;
  return {
    demoClientSecret: secret.value,
    directory: {
      version: 1,
      defaultTenantId: tenantId,
      subscriptionId,
      tenants: [{ id: tenantId, domain: 'offcloud.onmicrosoft.com' }],
      apis: [api],
      clients: [client],
      appRoleAssignments: [{ principalId: client.servicePrincipalId, resourceAppId: api.appId, appRoleId: roleId }],
      managedIdentities: [system],
      dataRoleAssignments: [
        { principalId: system.principalId, role: 'Storage Blob Data Contributor', scope: storageScope },
        { principalId: client.servicePrincipalId, role: 'Storage Blob Data Contributor', scope: storageScope },
      ],
    },
  };
}

export function userAssignedResourceId(directory: Directory, name: string): string {
  return `/subscriptions/${directory.subscriptionId}/resourceGroups/offcloud/providers/Microsoft.ManagedIdentity/userAssignedIdentities/${name}`;
}

// ---------------------------------------------------------------- persistence

export function defaultDirectoryPath(dataDir: string): string {
  return resolve(dataDir, 'identity', 'directory.json');
}

function isYaml(path: string): boolean {
  return ['.yaml', '.yml'].includes(extname(path).toLowerCase());
}

function serialize(path: string, directory: Directory): string {
  return isYaml(path) ? stringifyYaml(directory) : `${JSON.stringify(directory, null, 2)}\n`;
}

function record(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ConfigError(`${where} must be an object`);
  return value as Record<string, unknown>;
}

function list(value: unknown, where: string): Record<string, unknown>[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ConfigError(`${where} must be a list`);
  return value.map((item, i) => record(item, `${where}[${i}]`));
}

function text(value: unknown, where: string, fallback?: string): string {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'string' || value === '') throw new ConfigError(`${where} must be a non-empty string`);
  return value;
}

function guid(value: unknown, where: string, fallback?: string): string {
  const id = text(value, where, fallback);
  if (!GUID.test(id)) throw new ConfigError(`${where} must be a GUID, got ${JSON.stringify(id)}`);
  return id.toLowerCase();
}

/**
 * Checks a directory read from a file and fills optional fields, so a
 * hand-written YAML file may leave out ids (made up on load) and give a client
 * secret as `{ value }` in clear (hashed in memory; meant for CI fixtures).
 */
export function normalizeDirectory(raw: unknown, where: string, now = new Date()): Directory {
  const root = record(raw, where);
  const tenants = list(root.tenants, `${where}: tenants`).map((t, i) => ({
    id: guid(t.id, `${where}: tenants[${i}].id`),
    domain: t.domain === undefined || t.domain === null ? null : text(t.domain, `${where}: tenants[${i}].domain`).toLowerCase(),
  }));
  if (!tenants.length) throw new ConfigError(`${where}: at least one tenant is needed`);
  const defaultTenantId = guid(root.defaultTenantId, `${where}: defaultTenantId`, tenants[0]!.id);
  const tenantOf = (value: unknown, at: string) => {
    const id = guid(value, at, defaultTenantId);
    if (!tenants.some((t) => t.id === id)) throw new ConfigError(`${at}: unknown tenant ${id}`);
    return id;
  };
  const apis: ApiRegistration[] = list(root.apis, `${where}: apis`).map((a, i) => {
    const at = `${where}: apis[${i}]`;
    const version = a.accessTokenAcceptedVersion ?? null;
    if (version !== null && version !== 1 && version !== 2) throw new ConfigError(`${at}.accessTokenAcceptedVersion must be 1, 2 or null`);
    return {
      appId: guid(a.appId, `${at}.appId`, newId()),
      displayName: text(a.displayName, `${at}.displayName`, 'API'),
      tenantId: tenantOf(a.tenantId, `${at}.tenantId`),
      servicePrincipalId: guid(a.servicePrincipalId, `${at}.servicePrincipalId`, newId()),
      identifierUris: (Array.isArray(a.identifierUris) ? a.identifierUris : []).map((u, j) => text(u, `${at}.identifierUris[${j}]`)),
      appRoles: list(a.appRoles, `${at}.appRoles`).map((r, j) => ({
        id: guid(r.id, `${at}.appRoles[${j}].id`, newId()),
        value: text(r.value, `${at}.appRoles[${j}].value`),
        displayName: text(r.displayName, `${at}.appRoles[${j}].displayName`, String(r.value)),
        description: text(r.description, `${at}.appRoles[${j}].description`, String(r.value)),
        allowedMemberTypes: Array.isArray(r.allowedMemberTypes) ? r.allowedMemberTypes.map(String) : ['Application'],
        isEnabled: r.isEnabled !== false,
      })),
      accessTokenAcceptedVersion: version,
      appRoleAssignmentRequired: a.appRoleAssignmentRequired === true,
    };
  });
  const clients: ClientApplication[] = list(root.clients, `${where}: clients`).map((c, i) => {
    const at = `${where}: clients[${i}]`;
    return {
      appId: guid(c.appId, `${at}.appId`, newId()),
      displayName: text(c.displayName, `${at}.displayName`, 'client'),
      tenantId: tenantOf(c.tenantId, `${at}.tenantId`),
      servicePrincipalId: guid(c.servicePrincipalId, `${at}.servicePrincipalId`, newId()),
      secrets: list(c.secrets, `${at}.secrets`).map((s, j) => {
        const expiresAt = text(s.expiresAt, `${at}.secrets[${j}].expiresAt`, new Date(now.getTime() + DEFAULT_SECRET_DAYS * 86_400_000).toISOString());
        if (Number.isNaN(Date.parse(expiresAt))) throw new ConfigError(`${at}.secrets[${j}].expiresAt is not a date`);
        if (typeof s.value === 'string') return secretRecord(s.value, new Date(expiresAt), now);
        return {
          keyId: guid(s.keyId, `${at}.secrets[${j}].keyId`, newId()),
          hint: text(s.hint, `${at}.secrets[${j}].hint`, '???'),
          salt: text(s.salt, `${at}.secrets[${j}].salt`),
          hash: text(s.hash, `${at}.secrets[${j}].hash`),
          createdAt: text(s.createdAt, `${at}.secrets[${j}].createdAt`, now.toISOString()),
          expiresAt,
        };
      }),
      certificates: list(c.certificates, `${at}.certificates`).map((k, j) => clientCertificate(text(k.certificate, `${at}.certificates[${j}].certificate`), `${at}.certificates[${j}]`)),
    };
  });
  const appRoleAssignments = list(root.appRoleAssignments, `${where}: appRoleAssignments`).map((g, i) => ({
    principalId: guid(g.principalId, `${where}: appRoleAssignments[${i}].principalId`),
    resourceAppId: guid(g.resourceAppId, `${where}: appRoleAssignments[${i}].resourceAppId`),
    appRoleId: guid(g.appRoleId, `${where}: appRoleAssignments[${i}].appRoleId`),
  }));
  const subscriptionId = guid(root.subscriptionId, `${where}: subscriptionId`, newId());
  const managedIdentities: ManagedIdentity[] = list(root.managedIdentities, `${where}: managedIdentities`).map((m, i) => {
    const at = `${where}: managedIdentities[${i}]`;
    if (m.kind !== 'system' && m.kind !== 'user') throw new ConfigError(`${at}.kind must be "system" or "user"`);
    const name = text(m.name, `${at}.name`);
    return {
      kind: m.kind,
      name,
      clientId: guid(m.clientId, `${at}.clientId`, newId()),
      principalId: guid(m.principalId, `${at}.principalId`, newId()),
      resourceId: text(m.resourceId, `${at}.resourceId`, `/subscriptions/${subscriptionId}/resourceGroups/offcloud/providers/Microsoft.ManagedIdentity/userAssignedIdentities/${name}`),
      tenantId: tenantOf(m.tenantId, `${at}.tenantId`),
    };
  });
  const dataRoleAssignments = list(root.dataRoleAssignments, `${where}: dataRoleAssignments`).map((d, i) => {
    const at = `${where}: dataRoleAssignments[${i}]`;
    const role = text(d.role, `${at}.role`);
    if (!(DATA_ROLES as readonly string[]).includes(role)) throw new ConfigError(`${at}.role must be one of ${DATA_ROLES.join(', ')}`);
    return { principalId: guid(d.principalId, `${at}.principalId`), role: role as DataRole, scope: text(d.scope, `${at}.scope`) };
  });
  return { version: 1, defaultTenantId, subscriptionId, tenants, apis, clients, appRoleAssignments, managedIdentities, dataRoleAssignments };
}

function parseDirectory(path: string, content: string): Directory {
  let parsed: unknown;
  try {
    parsed = isYaml(path) ? parseYaml(content) : JSON.parse(content);
  } catch (err) {
    throw new ConfigError(`directory file ${path} is not valid ${isYaml(path) ? 'YAML' : 'JSON'}: ${(err as Error).message}`);
  }
  return normalizeDirectory(parsed, `directory file ${path}`);
}

/**
 * One directory file: `current()` rereads it when it was replaced (one stat
 * otherwise), `update()` applies a change and writes it atomically.
 */
export class DirectoryStore {
  private readonly file: FollowedFile<Directory>;

  constructor(readonly path: string) {
    this.file = new FollowedFile(path, (content) => parseDirectory(path, content));
  }

  /** Creates the file with the first-start seed if it is missing; returns the seed when this call made it. */
  /**
   * The demo client's secret, kept beside the directory: it is a demo, and a
   * user must be able to get it after a first start that failed half-way
   * (`offcloud env` prints it). Secrets a user adds stay shown once.
   */
  get demoSecretPath(): string {
    return resolve(dirname(this.path), 'demo-client-secret');
  }

  async ensure(): Promise<SeedResult | null> {
    if (await this.file.exists()) return null;
    const seed = seedDirectory();
    // The secret first: whoever makes the directory (identity, or storage reading it) must not lose it.
    await writeFileAtomic(this.demoSecretPath, `${seed.directory.clients[0]!.appId} ${seed.demoClientSecret}\n`, 0o600);
    return (await createFileExclusive(this.path, serialize(this.path, seed.directory), 0o600)) ? seed : null;
  }

  /** The demo client's id and secret when the seed made them and the client still has that secret. */
  async demoClient(): Promise<{ appId: string; secret: string } | null> {
    const [appId, secret] = (await readFile(this.demoSecretPath, 'utf8').catch(() => '')).trim().split(' ');
    if (!appId || !secret) return null;
    const client = (await this.current()).clients.find((c) => c.appId === appId);
    return client && checkClientSecret(client, secret).ok ? { appId, secret } : null;
  }

  current(): Promise<Directory> {
    return this.file.current();
  }

  async update<T>(change: (directory: Directory) => T): Promise<T> {
    const directory = structuredClone(await this.file.fresh());
    const result = change(directory);
    await writeFileAtomic(this.path, serialize(this.path, directory), 0o600);
    return result;
  }
}

/**
 * For other components (storage): the directory of a data dir, made with the
 * first-start seed when missing. Pass `file` when identity runs with `--directory`.
 */
export async function loadDirectory(dataDir: string, file?: string): Promise<Directory> {
  const store = openDirectory(dataDir, file);
  await store.ensure();
  return store.current();
}

/** A store that follows CLI edits: call `current()` per request (one stat when nothing changed). */
export function openDirectory(dataDir: string, file?: string): DirectoryStore {
  return new DirectoryStore(file ? resolve(file) : defaultDirectoryPath(dataDir));
}
