/**
 * Directory management: the operations behind `offcloud identity …` (and
 * what tests use to set up registrations). Each changes a Directory in place
 * and returns what the caller prints; persistence is DirectoryStore.update.
 */
import { UsageError } from '../common/errors.ts';
import {
  clientCertificate,
  createClientSecret,
  DATA_ROLES,
  DEFAULT_SECRET_DAYS,
  findApi,
  findResource,
  GUID,
  newId,
  userAssignedResourceId,
  type AccessTokenVersion,
  type ApiRegistration,
  type AppRole,
  type AppRoleAssignment,
  type ClientApplication,
  type ClientCertificate,
  type DataRole,
  type DataRoleAssignment,
  type Directory,
  type ManagedIdentity,
} from './directory/index.ts';

function tenantOf(directory: Directory, tenantId?: string): string {
  if (tenantId === undefined) return directory.defaultTenantId;
  const id = tenantId.toLowerCase();
  if (!directory.tenants.some((t) => t.id === id || t.domain === id)) throw new UsageError(`unknown tenant ${tenantId}`);
  return directory.tenants.find((t) => t.id === id || t.domain === id)!.id;
}

export interface CreateApiInput {
  displayName: string;
  identifierUri?: string;
  accessTokenAcceptedVersion?: AccessTokenVersion;
  appRoleAssignmentRequired?: boolean;
  tenantId?: string;
}

export function createApi(directory: Directory, input: CreateApiInput): ApiRegistration {
  const tenantId = tenantOf(directory, input.tenantId);
  const appId = newId();
  const identifierUri = input.identifierUri ?? `api://${appId}`;
  if (findResource(directory, tenantId, identifierUri)) throw new UsageError(`an API with identifier URI ${identifierUri} exists already`);
  const api: ApiRegistration = {
    appId,
    displayName: input.displayName,
    tenantId,
    servicePrincipalId: newId(),
    identifierUris: [identifierUri],
    appRoles: [],
    accessTokenAcceptedVersion: input.accessTokenAcceptedVersion === undefined ? 2 : input.accessTokenAcceptedVersion,
    appRoleAssignmentRequired: input.appRoleAssignmentRequired ?? false,
  };
  directory.apis.push(api);
  return api;
}

/** An API of this directory by application id or identifier URI (well-known resources have no roles to edit). */
export function requireApi(directory: Directory, identifier: string): ApiRegistration {
  const byId = GUID.test(identifier) ? findApi(directory, identifier) : undefined;
  const api = byId ?? directory.apis.find((a) => a.identifierUris.some((u) => u.toLowerCase() === identifier.toLowerCase()));
  if (!api) throw new UsageError(`no API registration ${identifier} in the directory (offcloud identity list)`);
  return api;
}

export function addAppRole(directory: Directory, apiIdentifier: string, input: { value: string; displayName?: string; description?: string }): AppRole {
  const api = requireApi(directory, apiIdentifier);
  if (!/^[^\s]+$/.test(input.value)) throw new UsageError('a role value has no spaces (it is what the roles claim carries)');
  if (api.appRoles.some((r) => r.value === input.value)) throw new UsageError(`API ${api.appId} has a role ${input.value} already`);
  const role: AppRole = {
    id: newId(),
    value: input.value,
    displayName: input.displayName ?? input.value,
    description: input.description ?? input.displayName ?? input.value,
    allowedMemberTypes: ['Application'],
    isEnabled: true,
  };
  api.appRoles.push(role);
  return role;
}

export function createClient(
  directory: Directory,
  input: { displayName: string; secretDays?: number; tenantId?: string },
  now = new Date(),
): { client: ClientApplication; secret: string } {
  const secret = createClientSecret(input.secretDays ?? DEFAULT_SECRET_DAYS, now);
  const client: ClientApplication = {
    appId: newId(),
    displayName: input.displayName,
    tenantId: tenantOf(directory, input.tenantId),
    servicePrincipalId: newId(),
    secrets: [secret.record],
    certificates: [],
  };
  directory.clients.push(client);
  return { client, secret: secret.value };
}

function requireClient(directory: Directory, appId: string): ClientApplication {
  const client = directory.clients.find((c) => c.appId === appId.toLowerCase());
  if (!client) throw new UsageError(`no client application ${appId} in the directory`);
  return client;
}

/** Adds a secret; `days` may be negative to make an already expired one (for tests of expiry). */
export function addClientSecret(
  directory: Directory,
  appId: string,
  days = DEFAULT_SECRET_DAYS,
  now = new Date(),
): { value: string; keyId: string; expiresAt: string } {
  const client = requireClient(directory, appId);
  const secret = createClientSecret(days, now);
  client.secrets.push(secret.record);
  return { value: secret.value, keyId: secret.record.keyId, expiresAt: secret.record.expiresAt };
}

/** Registers a certificate whose key may sign client assertions; its thumbprints are what the assertion names. */
export function addClientCertificate(directory: Directory, appId: string, pem: string): ClientCertificate {
  const client = requireClient(directory, appId);
  let certificate: ClientCertificate;
  try {
    certificate = clientCertificate(pem, 'the certificate');
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (!client.certificates.some((c) => c.thumbprintSha256 === certificate.thumbprintSha256)) client.certificates.push(certificate);
  return certificate;
}

/**
 * The object id of a principal named by object id, client application id or
 * managed identity client id, so commands accept whichever the user has at hand.
 */
export function resolvePrincipal(directory: Directory, given: string): string {
  const id = given.toLowerCase();
  const client = directory.clients.find((c) => c.appId === id || c.servicePrincipalId === id);
  if (client) return client.servicePrincipalId;
  const identity = directory.managedIdentities.find((m) => m.clientId === id || m.principalId === id);
  if (identity) return identity.principalId;
  if (GUID.test(id)) return id;
  throw new UsageError(`${given} is not a GUID`);
}

export function grantAppRole(directory: Directory, principal: string, apiIdentifier: string, roleValue: string): AppRoleAssignment {
  const api = requireApi(directory, apiIdentifier);
  const role = api.appRoles.find((r) => r.value === roleValue || r.id === roleValue.toLowerCase());
  if (!role) throw new UsageError(`API ${api.appId} has no role ${roleValue}; its roles: ${api.appRoles.map((r) => r.value).join(', ') || 'none'}`);
  if (!role.allowedMemberTypes.includes('Application')) throw new UsageError(`role ${role.value} is not assignable to applications`);
  const grant = { principalId: resolvePrincipal(directory, principal), resourceAppId: api.appId, appRoleId: role.id };
  const exists = directory.appRoleAssignments.some(
    (a) => a.principalId === grant.principalId && a.resourceAppId === grant.resourceAppId && a.appRoleId === grant.appRoleId,
  );
  if (!exists) directory.appRoleAssignments.push(grant);
  return grant;
}

export function createUserAssignedIdentity(directory: Directory, name: string): ManagedIdentity {
  if (!/^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/.test(name)) throw new UsageError('an identity name is letters, digits, "-" and "_"');
  if (directory.managedIdentities.some((m) => m.name === name && m.kind === 'user')) throw new UsageError(`identity ${name} exists already`);
  const identity: ManagedIdentity = {
    kind: 'user',
    name,
    clientId: newId(),
    principalId: newId(),
    resourceId: userAssignedResourceId(directory, name),
    tenantId: directory.defaultTenantId,
  };
  directory.managedIdentities.push(identity);
  return identity;
}

export function assignDataRole(directory: Directory, principal: string, role: string, scope: string): DataRoleAssignment {
  if (!(DATA_ROLES as readonly string[]).includes(role)) throw new UsageError(`role must be one of: ${DATA_ROLES.join(', ')}`);
  if (scope !== '*' && !/^\/[A-Za-z0-9/_.-]*$/.test(scope)) throw new UsageError('scope is "*" or a path such as /storage/devstoreaccount1');
  const assignment: DataRoleAssignment = { principalId: resolvePrincipal(directory, principal), role: role as DataRole, scope };
  const exists = directory.dataRoleAssignments.some(
    (a) => a.principalId === assignment.principalId && a.role === assignment.role && a.scope === assignment.scope,
  );
  if (!exists) directory.dataRoleAssignments.push(assignment);
  return assignment;
}

/** The directory as `list` prints it: secrets reduced to hint and expiry. */
export function describeDirectory(directory: Directory): unknown {
  return {
    ...directory,
    clients: directory.clients.map((c) => ({
      ...c,
      secrets: c.secrets.map((s) => ({ keyId: s.keyId, hint: s.hint, createdAt: s.createdAt, expiresAt: s.expiresAt })),
    })),
  };
}
