/**
 * The directory's model: tenants, API registrations with their app roles, client
 * applications with hashed secrets, app role assignments, managed identities and
 * data-plane role assignments (what storage reads), and the well-known resources.
 */
import { randomUUID } from 'node:crypto';

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
export const DATA_ROLES = ['Storage Blob Data Reader', 'Storage Blob Data Contributor', 'Storage Blob Data Owner'] as const;
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
