/** What a first start creates in an empty data dir. */
import { hostname } from 'node:os';
import { type ApiRegistration, type ClientApplication, DEFAULT_STORAGE_ACCOUNT, type Directory, type ManagedIdentity, newId } from './model.ts';
import { createClientSecret, DEFAULT_SECRET_DAYS } from './secrets.ts';

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
