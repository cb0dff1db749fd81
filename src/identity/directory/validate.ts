/**
 * A directory file's validation: JSON or YAML into a checked Directory, every bad
 * field named in one line (the file is hand-editable with --directory).
 */
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from '../../common/errors.ts';
import { type ApiRegistration, type ClientApplication, DATA_ROLES, type DataRole, type Directory, GUID, type ManagedIdentity, newId } from './model.ts';
import { clientCertificate, DEFAULT_SECRET_DAYS, secretRecord } from './secrets.ts';

export function isYaml(path: string): boolean {
  return ['.yaml', '.yml'].includes(extname(path).toLowerCase());
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
      certificates: list(c.certificates, `${at}.certificates`).map((k, j) =>
        clientCertificate(text(k.certificate, `${at}.certificates[${j}].certificate`), `${at}.certificates[${j}]`),
      ),
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
      resourceId: text(
        m.resourceId,
        `${at}.resourceId`,
        `/subscriptions/${subscriptionId}/resourceGroups/offcloud/providers/Microsoft.ManagedIdentity/userAssignedIdentities/${name}`,
      ),
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

export function parseDirectory(path: string, content: string): Directory {
  let parsed: unknown;
  try {
    parsed = isYaml(path) ? parseYaml(content) : JSON.parse(content);
  } catch (err) {
    throw new ConfigError(`directory file ${path} is not valid ${isYaml(path) ? 'YAML' : 'JSON'}: ${(err as Error).message}`);
  }
  return normalizeDirectory(parsed, `directory file ${path}`);
}
