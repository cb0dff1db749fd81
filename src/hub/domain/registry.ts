/**
 * The identity registry: devices and their modules, each with a primary and a
 * secondary symmetric key, enabled or disabled. Plain functions over records;
 * storage is the store's job.
 */
import { randomBytes } from 'node:crypto';
import { newEtag } from './etag.ts';
import { HubError, invalidArgument } from './errors.ts';
import { generateKey } from './sas.ts';
import { NEVER, newTwin, type Twin } from './twin.ts';
import { x509AuthenticationFrom, type X509Authentication } from './x509.ts';

export interface Identity {
  deviceId: string;
  moduleId?: string;
}

export interface SymmetricKeys {
  primaryKey: string;
  secondaryKey: string;
}

export type DeviceStatus = 'enabled' | 'disabled';

export interface IdentityRecord {
  deviceId: string;
  moduleId?: string;
  generationId: string;
  etag: string;
  status: DeviceStatus;
  statusUpdatedTime: string;
  keys: SymmetricKeys;
  twin: Twin;
  /** The Plug and Play model the device announced when it last connected with one. */
  modelId?: string;
  /** How the identity authenticates when not by its keys (SAS): X.509 thumbprints or a CA. */
  authentication?: X509Authentication;
}

/** Characters the real hub allows in device and module ids, up to 128 of them. */
const ID_PATTERN = /^[A-Za-z0-9\-.%_*?!(),:=@$']{1,128}$/;

export function validateId(id: unknown, what: 'deviceId' | 'moduleId'): string {
  if (typeof id !== 'string' || !ID_PATTERN.test(id)) {
    throw invalidArgument(`${what} must be 1 to 128 characters of A-Z a-z 0-9 - . % _ * ? ! ( ) , : = @ $ '`);
  }
  return id;
}

/** `d1` for a device, `d1/m1` for a module: the MQTT client id and the store key. */
export function identityKey(identity: Identity): string {
  return identity.moduleId ? `${identity.deviceId}/${identity.moduleId}` : identity.deviceId;
}

export function parseIdentityKey(key: string): Identity | undefined {
  const parts = key.split('/');
  if (parts.length > 2 || !parts.every((p) => ID_PATTERN.test(p))) return undefined;
  return parts[1] ? { deviceId: parts[0]!, moduleId: parts[1] } : { deviceId: parts[0]! };
}

function validKey(value: unknown, name: string): string {
  if (typeof value !== 'string' || Buffer.from(value, 'base64').length < 16 || !/^[A-Za-z0-9+/]+={0,2}$/.test(value)) {
    throw invalidArgument(`${name} must be a base64 key of 16 to 64 bytes`);
  }
  if (Buffer.from(value, 'base64').length > 64) throw invalidArgument(`${name} must be a base64 key of 16 to 64 bytes`);
  return value;
}

export interface IdentityInput {
  status?: unknown;
  authentication?: { type?: unknown; symmetricKey?: { primaryKey?: unknown; secondaryKey?: unknown }; x509Thumbprint?: unknown } | unknown;
}

function keysFrom(input: IdentityInput, current?: SymmetricKeys): SymmetricKeys {
  const auth = input.authentication;
  const given = typeof auth === 'object' && auth !== null ? (auth as { symmetricKey?: unknown }).symmetricKey : undefined;
  const sym = typeof given === 'object' && given !== null ? (given as { primaryKey?: unknown; secondaryKey?: unknown }) : {};
  const pick = (value: unknown, name: string, fallback: string | undefined) =>
    value === undefined || value === null || value === '' ? (fallback ?? generateKey()) : validKey(value, name);
  return {
    primaryKey: pick(sym.primaryKey, 'primaryKey', current?.primaryKey),
    secondaryKey: pick(sym.secondaryKey, 'secondaryKey', current?.secondaryKey),
  };
}

function statusFrom(value: unknown, current: DeviceStatus): DeviceStatus {
  if (value === undefined || value === null) return current;
  if (value !== 'enabled' && value !== 'disabled') throw invalidArgument('status must be "enabled" or "disabled"');
  return value;
}

export function createIdentityRecord(identity: Identity, input: IdentityInput = {}, now = new Date()): IdentityRecord {
  return {
    ...identity,
    generationId: `${Date.now()}${randomBytes(3).readUIntBE(0, 3)}`,
    etag: newEtag(),
    status: statusFrom(input.status, 'enabled'),
    statusUpdatedTime: now.toISOString(),
    keys: keysFrom(input),
    ...withAuthentication(x509AuthenticationFrom(input.authentication)),
    twin: newTwin(now),
  };
}

function withAuthentication(authentication: X509Authentication | undefined): { authentication?: X509Authentication } {
  return authentication ? { authentication } : {};
}

/** A PUT on an existing identity: status, keys and the kind of authentication change, the twin stays. */
export function updateIdentityRecord(record: IdentityRecord, input: IdentityInput, now = new Date()): IdentityRecord {
  const status = statusFrom(input.status, record.status);
  const { authentication: _current, ...rest } = record;
  return {
    ...rest,
    etag: newEtag(),
    status,
    statusUpdatedTime: status === record.status ? record.statusUpdatedTime : now.toISOString(),
    keys: keysFrom(input, record.keys),
    ...withAuthentication(input.authentication === undefined ? record.authentication : x509AuthenticationFrom(input.authentication)),
  };
}

/** The `authentication` of the device JSON: keys for a SAS identity, thumbprints for a selfSigned one. */
export function authenticationView(record: Pick<IdentityRecord, 'keys' | 'authentication'>) {
  const auth = record.authentication;
  return {
    type: auth?.type ?? 'sas',
    symmetricKey: auth ? { primaryKey: null, secondaryKey: null } : { ...record.keys },
    x509Thumbprint:
      auth?.type === 'selfSigned'
        ? { primaryThumbprint: auth.primaryThumbprint, secondaryThumbprint: auth.secondaryThumbprint }
        : { primaryThumbprint: null, secondaryThumbprint: null },
  };
}

export function regenerateKey(record: IdentityRecord, which: unknown): IdentityRecord {
  if (which !== 'primary' && which !== 'secondary' && which !== 'both') {
    throw invalidArgument('key must be "primary", "secondary" or "both"');
  }
  return {
    ...record,
    etag: newEtag(),
    keys: {
      primaryKey: which === 'secondary' ? record.keys.primaryKey : generateKey(),
      secondaryKey: which === 'primary' ? record.keys.secondaryKey : generateKey(),
    },
  };
}

/** The device JSON of the REST API (the shape azure-iothub's Registry reads). */
export function deviceView(record: IdentityRecord, connected: boolean, pendingC2d = 0) {
  return {
    deviceId: record.deviceId,
    ...(record.moduleId ? { moduleId: record.moduleId } : {}),
    generationId: record.generationId,
    etag: record.etag,
    connectionState: connected ? 'Connected' : 'Disconnected',
    status: record.status,
    statusReason: null,
    statusUpdatedTime: record.statusUpdatedTime,
    lastActivityTime: NEVER,
    cloudToDeviceMessageCount: pendingC2d,
    authentication: authenticationView(record),
    capabilities: { iotEdge: false },
  };
}

/**
 * A device's connection string for a hub whose MQTT port is `port`. The SDK dials the HostName
 * (port 8883 unless one is appended); a hub name that is not a loopback name (a realistic
 * `myhub.azure-devices.net`) stays in HostName for the SAS, and GatewayHostName sends the
 * connection to this machine.
 */
export function connectionString(hostName: string, port: number, record: Pick<IdentityRecord, 'deviceId' | 'moduleId' | 'keys'>): string {
  const withPort = (host: string) => (port === 8883 ? host : `${host}:${port}`);
  const local = ['localhost', '127.0.0.1', '[::1]'].includes(hostName.toLowerCase());
  return [
    `HostName=${local ? withPort(hostName) : hostName}`,
    `DeviceId=${record.deviceId}`,
    ...(record.moduleId ? [`ModuleId=${record.moduleId}`] : []),
    `SharedAccessKey=${record.keys.primaryKey}`,
    ...(local ? [] : [`GatewayHostName=${withPort('localhost')}`]),
  ].join(';');
}

export function notFound(identity: Identity): HubError {
  return identity.moduleId
    ? new HubError('ModuleNotFound', `module ${identity.moduleId} on device ${identity.deviceId} not found`)
    : new HubError('DeviceNotFound', `device ${identity.deviceId} not found`);
}

export function alreadyExists(record: IdentityRecord): HubError {
  return record.moduleId
    ? new HubError('ModuleAlreadyExistsOnDevice', `module ${record.moduleId} already exists on device ${record.deviceId}`)
    : new HubError('DeviceAlreadyExists', `device ${record.deviceId} already exists`);
}
