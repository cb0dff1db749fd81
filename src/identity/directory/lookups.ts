/** Questions the issuer and storage ask of a directory: which tenant, client, resource, identity, role. */
import {
  type ApiRegistration,
  type ClientApplication,
  type DataRoleAssignment,
  type Directory,
  type ManagedIdentity,
  type Tenant,
  WELL_KNOWN_RESOURCES,
} from './model.ts';

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
  return candidates.find((api) => api.appId === identifier.toLowerCase() || api.identifierUris.some((uri) => sameResourceUri(uri, identifier)));
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
  const granted = new Set(directory.appRoleAssignments.filter((a) => a.principalId === principalId && a.resourceAppId === api.appId).map((a) => a.appRoleId));
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
  return directory.dataRoleAssignments.filter((a) => a.principalId === wanted && (target === undefined || scopeCovers(a.scope, target)));
}
