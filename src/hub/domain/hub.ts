/**
 * The device hub's operations in its own vocabulary, shared by the MQTT
 * endpoint, the REST API and the CLI: authenticate a device or a service
 * caller, read and patch twins, queue cloud-to-device messages, invoke direct
 * methods, record telemetry. Protocol adapters stay thin around this.
 */
import { randomUUID, X509Certificate } from 'node:crypto';
import type { Logger } from 'pino';
import { HubError, invalidArgument } from './errors.ts';
import type { HubBus, HubEvent, HubEventHandler } from './bus.ts';
import { C2dDelivery, type C2dOutcome } from './c2d.ts';
import { createC2dMessage, describeBody, isoNow, MAX_TELEMETRY_BYTES, TelemetryLog, type C2dMessage, type DeadC2d, type PropertyBag } from './messages.ts';
import { FileUploads, type FileNotification, type FileUploadGrant, type FileUploadSettings } from './file-upload.ts';
import { hasRight, type Right } from './policies.ts';
import { ServiceQueue, type FeedbackRecord, type KeptFeedback } from './service-queue.ts';
import { parseQuery, runQuery } from './query.ts';
import {
  authenticationView,
  createIdentityRecord,
  deviceView,
  identityKey,
  notFound,
  parseIdentityKey,
  regenerateKey,
  updateIdentityRecord,
  validateId,
  type Identity,
  type IdentityInput,
  type IdentityRecord,
} from './registry.ts';
import { hostWithoutPort, isExpired, parseSasToken, resourceCovers, signedWith } from './sas.ts';
import type { HubStore } from './store.ts';
import {
  caCertificateNamed,
  caCertificateView,
  putCaCertificate,
  validateCertificateName,
  verifyCaCertificate,
  withVerificationCode,
  x509Refusal,
  type CaCertificateRecord,
  type PresentedChain,
} from './x509.ts';
import {
  deviceTwinView,
  parsePatch,
  parseServiceTwinUpdate,
  patchReportedProperties,
  serviceTwinView,
  updateDesiredProperties,
  type JsonValue,
  type TwinLimits,
} from './twin.ts';

export interface HubSettings {
  /** The host name devices put in their username and SAS resource (`localhost`, `myhub.azure-devices.net`). */
  hostName: string;
  limits: TwinLimits;
  c2dTtlSeconds: number;
  /** Deliveries of a C2D message before it is dead-lettered (feedback DeliveryCountExceeded), as the real hub's setting. */
  c2dMaxDeliveryCount: number;
  /** The clock of C2D expiry and file-upload SAS ends (tests inject one). */
  now?: () => number;
  telemetryLogSize: number;
  /** Names this replica on the bus (method responses find their way back by it). */
  replicaId: string;
  /** Where devices upload files; none when file upload is not configured. */
  fileUploads?: FileUploadSettings;
  /** Told of each thing this replica did, for the component's metrics. */
  count?: (what: HubActivity) => void;
}

/** What the hub counts: telemetry accepted, reported patches stored, C2D messages queued, methods invoked. */
export type HubActivity = 'telemetry' | 'reported-patch' | 'c2d-sent' | 'method-invoked';

/** The first api-version with the twin topics (§9); older or missing ones may not use twins. */
export const MIN_TWIN_API_VERSION = '2016-11-14';

export interface DeviceConnection {
  identity: Identity;
  key: string;
  /** False when the username had no api-version (or one older than twins): a twin operation disconnects (§7). */
  twinAllowed: boolean;
  /** The Digital Twins model a Plug and Play device announced (`model-id=` in the username). */
  modelId?: string;
}

/** Why a CONNECT was refused (CONNACK 5), for the log; the device only sees the code. */
export class ConnectRefused extends Error {}

/** What a device proves itself with: a SAS token, or the certificate chain of its TLS handshake. */
export interface DeviceCredentials {
  token?: string | undefined;
  certificate?: PresentedChain | undefined;
}

/** Why a REST call was refused, for the log; the caller only sees 401 `Unauthorized`, as from the real hub. */
export class ServiceRefused extends HubError {
  constructor(readonly reason: string) {
    super('IotHubUnauthorizedAccess', 'Unauthorized');
  }
}

const MAX_METHOD_PAYLOAD_BYTES = 128 * 1024;
/** How long a received C2D message stays locked for its device, as the real hub's default lock timeout. */
const C2D_LOCK_MS = 60_000;
/** Feedback records, and file notifications, kept for a receiver that has not come yet (the oldest go first). */
const MAX_FEEDBACK_RECORDS = 10_000;
/** The description of each feedback status, as the real hub words them. */
const FEEDBACK_DESCRIPTIONS: Record<Exclude<FeedbackRecord['statusCode'], 'Purged'>, string> = {
  Success: 'Success',
  Rejected: 'Message rejected',
  Expired: 'Message expired',
  DeliveryCountExceeded: 'Message delivery count exceeded',
};
/** A Digital Twins model id (`dtmi:com:example:Thermostat;1`), as the real hub accepts it. */
const MODEL_ID_PATTERN = /^dtmi:[A-Za-z](?:[A-Za-z0-9_]*[A-Za-z0-9])?(?::[A-Za-z](?:[A-Za-z0-9_]*[A-Za-z0-9])?)*;[1-9][0-9]{0,8}$/;

/** `<host>/<clientId>/[?]api-version=…&model-id=…&…`: the host, whether twins are allowed, the Plug and Play model id. */
export function parseUsername(username: string, clientId: string): { host: string; twinAllowed: boolean; modelId?: string } | undefined {
  const slash = username.indexOf('/');
  if (slash <= 0) return undefined;
  const rest = username.slice(slash + 1);
  if (!rest.startsWith(clientId)) return undefined;
  const after = rest.slice(clientId.length);
  if (after !== '' && !after.startsWith('/')) return undefined;
  const query = after.slice(1).replace(/^\?/, '');
  const parameters = new URLSearchParams(query);
  const date = /^\d{4}-\d{2}-\d{2}/.exec(parameters.get('api-version') ?? '')?.[0];
  const modelId = parameters.get('model-id') ?? undefined;
  return { host: username.slice(0, slash), twinAllowed: date !== undefined && date >= MIN_TWIN_API_VERSION, ...(modelId ? { modelId } : {}) };
}

/** If-Match: absent or `*` matches anything; otherwise the quoted (or bare) etag. */
export function checkIfMatch(ifMatch: string | undefined, etag: string): void {
  if (ifMatch === undefined || ifMatch.trim() === '*' || ifMatch.trim() === '"*"') return;
  if (ifMatch.trim().replace(/^W\//, '').replace(/^"|"$/g, '') !== etag) {
    throw new HubError('PreconditionFailed', 'the etag in If-Match does not match the current one');
  }
}

/** The offset a continuation token of ours names. */
function continuationOffset(token: string): number {
  let offset: unknown;
  try {
    offset = (JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as { offset?: unknown }).offset;
  } catch {
    offset = undefined;
  }
  if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0) throw invalidArgument('the continuation token is not one this hub gave');
  return offset;
}

interface PendingMethod {
  resolve(result: { status: number; payload: JsonValue }): void;
  reject(err: HubError): void;
  timer: NodeJS.Timeout;
}

export class DeviceHub {
  readonly telemetry: TelemetryLog;
  /** Delivery feedback waiting for the service side's feedback receiver. */
  readonly feedback = new ServiceQueue<KeptFeedback>(MAX_FEEDBACK_RECORDS);
  /** File notifications waiting for the service side's file notification receiver. */
  readonly fileNotifications = new ServiceQueue<FileNotification>(MAX_FEEDBACK_RECORDS);
  private readonly files: FileUploads;
  private readonly now: () => number;
  private readonly pendingMethods = new Map<string, PendingMethod>();
  /** The C2D message a polling device received and has not settled, by device (on this replica). */
  private readonly c2dLocks = new Map<string, { message: C2dMessage; lockToken: string; until: number }>();

  constructor(
    private readonly store: HubStore,
    private readonly bus: HubBus,
    readonly settings: HubSettings,
    private readonly logger: Logger,
  ) {
    this.telemetry = new TelemetryLog(settings.telemetryLogSize);
    this.now = settings.now ?? Date.now;
    this.files = new FileUploads(settings.fileUploads, () => this.policyKey('iothubowner'), this.now);
    bus.subscribe((event) => this.handleEvent(event));
  }

  private handleEvent(event: HubEvent): void {
    if (event.type === 'telemetry') this.telemetry.append(event.message);
    if (event.type === 'feedback') this.feedback.add(event.kept);
    if (event.type === 'file-notification') this.fileNotifications.add(event.notification);
    if (event.type === 'method-response' && event.origin === this.settings.replicaId) {
      const pending = this.pendingMethods.get(event.rid);
      if (!pending) return;
      this.pendingMethods.delete(event.rid);
      clearTimeout(pending.timer);
      if (event.notSubscribed) pending.reject(new HubError('DeviceNotOnline', 'the device is not subscribed to direct methods'));
      else pending.resolve({ status: event.status, payload: event.payload });
    }
  }

  // ---- device side -------------------------------------------------------

  /**
   * CONNECT (§5): client id, username and SAS password, or no password and the client
   * certificate of the TLS handshake (X.509); throws ConnectRefused.
   */
  async authenticateDevice(
    clientId: string,
    username: string | undefined,
    password: Buffer | undefined,
    certificate?: PresentedChain,
  ): Promise<DeviceConnection> {
    const identity = parseIdentityKey(clientId);
    if (!identity) throw new ConnectRefused(`client id ${JSON.stringify(clientId.slice(0, 64))} is not a device or device/module id`);
    const parsed = username === undefined ? undefined : parseUsername(username, clientId);
    if (!parsed) throw new ConnectRefused('username is not <host>/<client id>/…');
    if (hostWithoutPort(parsed.host) !== hostWithoutPort(this.settings.hostName))
      throw new ConnectRefused(`username names hub ${parsed.host}, not ${this.settings.hostName}`);
    const key = identityKey(identity);
    await this.verifyDeviceCredentials(identity, { token: password?.toString('utf8'), certificate });
    const connection = { identity, key, twinAllowed: parsed.twinAllowed, ...(parsed.modelId ? { modelId: parsed.modelId } : {}) };
    // Stored before the connection is accepted, so the twin shows it once the device is open.
    await this.announceModel(connection);
    return connection;
  }

  /** A SAS token when one is given, else the client certificate (X.509); see the two below. */
  verifyDeviceCredentials(identity: Identity, { token, certificate }: DeviceCredentials): Promise<IdentityRecord> {
    return token === undefined && certificate?.length ? this.verifyDeviceCertificate(identity, certificate) : this.verifyDeviceToken(identity, token);
  }

  /** The registered, enabled identity (a module's device enabled too), or ConnectRefused. */
  private async enabledIdentity(identity: Identity): Promise<IdentityRecord> {
    const key = identityKey(identity);
    const record = await this.store.getIdentity(key);
    if (!record) throw new ConnectRefused(`${key} is not registered`);
    if (record.status !== 'enabled') throw new ConnectRefused(`${key} is disabled`);
    if (identity.moduleId) {
      const device = await this.store.getIdentity(identity.deviceId);
      if (device?.status !== 'enabled') throw new ConnectRefused(`device ${identity.deviceId} is disabled or gone`);
    }
    return record;
  }

  /**
   * A device's (or module's) SAS token, signed with one of its keys (an identity that uses
   * X.509 has none) or with a policy that may connect devices, for a resource that covers it;
   * the identity must be enabled. Throws ConnectRefused with the reason.
   */
  async verifyDeviceToken(identity: Identity, tokenText: string | undefined): Promise<IdentityRecord> {
    const token = tokenText === undefined ? undefined : parseSasToken(tokenText);
    if (!token) throw new ConnectRefused('the credential is not a SharedAccessSignature');
    if (isExpired(token)) throw new ConnectRefused('the SAS token has expired');
    const target = `${this.settings.hostName}/devices/${identity.deviceId}${identity.moduleId ? `/modules/${identity.moduleId}` : ''}`;
    if (!resourceCovers(token.resource, target)) throw new ConnectRefused(`the SAS token is for ${token.resource}, not ${target}`);
    const record = await this.enabledIdentity(identity);
    if (record.authentication && !token.keyName) throw new ConnectRefused(`${identityKey(identity)} authenticates with X.509, not with keys`);
    let keys = [record.keys.primaryKey, record.keys.secondaryKey];
    if (token.keyName) {
      const policy = hasRight(token.keyName, 'deviceConnect') ? (await this.store.policies())[token.keyName] : undefined;
      if (!policy) throw new ConnectRefused(`policy ${token.keyName} may not connect devices`);
      keys = [policy.primaryKey, policy.secondaryKey];
    }
    if (!keys.some((k) => signedWith(token, k))) throw new ConnectRefused('the SAS signature does not match');
    return record;
  }

  /**
   * X.509 (the TLS handshake proved the key): the identity is registered `selfSigned` with the
   * certificate's thumbprint, or `certificateAuthority` and the certificate, whose CN is the
   * device id, chains to a verified CA certificate of the hub.
   */
  async verifyDeviceCertificate(identity: Identity, chain: PresentedChain): Promise<IdentityRecord> {
    const record = await this.enabledIdentity(identity);
    if (!record.authentication) throw new ConnectRefused(`${identityKey(identity)} authenticates with keys (SAS), not with a certificate`);
    const roots = record.authentication.type === 'certificateAuthority' ? await this.verifiedCaCertificates() : [];
    const refusal = x509Refusal(record.authentication, identity.deviceId, chain, roots, new Date());
    if (refusal) throw new ConnectRefused(refusal);
    return record;
  }

  private async verifiedCaCertificates(): Promise<X509Certificate[]> {
    return Object.values(await this.store.caCertificates())
      .filter((c) => c.isVerified)
      .map((c) => new X509Certificate(c.certificate));
  }

  /** A device's HTTPS request: its SAS token in `Authorization`, or its client certificate; refused as the service's calls are (401). */
  async authenticateDeviceRequest(identity: Identity, credentials: DeviceCredentials): Promise<void> {
    try {
      await this.verifyDeviceCredentials(identity, credentials);
    } catch (err) {
      if (err instanceof ConnectRefused) throw new ServiceRefused(err.message);
      throw err;
    }
  }

  async deviceTwin(key: string) {
    const record = await this.store.getIdentity(key);
    if (!record) throw notFound(parseIdentityKey(key) ?? { deviceId: key });
    return deviceTwinView(record.twin);
  }

  /** Reported PATCH (§3): the new reported `$version`, once the change is stored. */
  async patchReported(key: string, payload: Buffer): Promise<number> {
    const patch = parsePatch(payload);
    const record = await this.store.updateIdentity(key, (r) => ({ ...r, twin: patchReportedProperties(r.twin, patch, this.settings.limits) }));
    this.settings.count?.('reported-patch');
    return record.twin.reported.version;
  }

  /**
   * A connection was accepted: it is now the identity's one connection (older
   * ones, on any replica, close). A clean=true session drops a kept C2D
   * subscription; true when a kept one resumes without a new SUBSCRIBE.
   */
  async deviceConnected(connection: DeviceConnection, connectionId: string, keepSession: boolean): Promise<boolean> {
    await this.store.setOnline(connection.key, connectionId);
    await this.bus.publish({ type: 'connected', key: connection.key, connectionId });
    const { deviceId, moduleId } = connection.identity;
    if (moduleId) return false;
    if (!keepSession) {
      await this.store.setPersistentC2dSubscription(deviceId, false);
      return false;
    }
    return this.store.hasPersistentC2dSubscription(deviceId);
  }

  /** A Plug and Play device's model id goes into its registry record and twin, as the real hub shows it. */
  private async announceModel({ key, modelId }: DeviceConnection): Promise<void> {
    if (modelId === undefined || !MODEL_ID_PATTERN.test(modelId)) return;
    const record = await this.store.getIdentity(key);
    if (record && record.modelId !== modelId) await this.store.updateIdentity(key, (r) => ({ ...r, modelId }));
  }

  /** Only the connection that is online may mark the identity offline (a newer one may have taken over). */
  deviceDisconnected(key: string, connectionId: string): Promise<void> {
    return this.store.setOffline(key, connectionId);
  }

  /** A SUBSCRIBE to the device's C2D topic; a clean=false session keeps it across connections. */
  async c2dSubscribed(deviceId: string, keepSession: boolean): Promise<void> {
    if (keepSession) await this.store.setPersistentC2dSubscription(deviceId, true);
  }

  c2dUnsubscribed(deviceId: string): Promise<void> {
    return this.store.setPersistentC2dSubscription(deviceId, false);
  }

  /** The C2D delivery of one connection: `send` puts a message on the wire, an acknowledgement completes it. */
  c2dDelivery(deviceId: string, send: (message: C2dMessage) => void): C2dDelivery {
    return new C2dDelivery(
      this.store,
      () => this.claimC2d(deviceId),
      deviceId,
      send,
      this.logger,
      (message, outcome) => this.c2dFeedback(deviceId, message, outcome === 'complete' ? 'Success' : 'Rejected'),
    );
  }

  /** The next C2D message to hand to the device, its delivery counted; expired and over-delivered ones are dead-lettered. */
  private async claimC2d(deviceId: string): Promise<C2dMessage | undefined> {
    const { message, dead } = await this.store.claimC2d(deviceId, this.now(), this.settings.c2dMaxDeliveryCount);
    await this.deadLettered(deviceId, dead);
    return message;
  }

  private async deadLettered(deviceId: string, dead: DeadC2d[]): Promise<void> {
    for (const { message, reason } of dead) await this.c2dFeedback(deviceId, message, reason);
  }

  /** Events for the device endpoint (desired pushes, method requests, C2D, connection takeovers). */
  onEvent(handler: HubEventHandler): void {
    this.bus.subscribe(handler);
  }

  /** A method request reached a connected device that never subscribed to methods: the caller gets 404 at once. */
  methodNotSubscribed(rid: string, origin: string): Promise<void> {
    return this.bus.publish({ type: 'method-response', rid, status: 404, payload: null, origin, notSubscribed: true });
  }

  /**
   * A polling receive (HTTP): the oldest pending C2D message, locked for the device until it
   * is settled or the lock times out (then it may be received again, with a new lock token).
   * Undefined when nothing is pending, or the oldest is locked by an earlier receive.
   */
  async receiveC2d(deviceId: string): Promise<{ message: C2dMessage; lockToken: string } | undefined> {
    const now = this.now();
    const oldest = await this.store.nextC2d(deviceId, now);
    if (!oldest) return undefined;
    const lock = this.c2dLocks.get(deviceId);
    if (lock && lock.message.id === oldest.id && lock.until > now) return undefined;
    const message = await this.claimC2d(deviceId);
    if (!message) return undefined;
    const lockToken = randomUUID();
    this.c2dLocks.set(deviceId, { message, lockToken, until: now + C2D_LOCK_MS });
    return { message, lockToken };
  }

  /** Complete (removed), reject (removed, dead-lettered) or abandon (pending again) the message a lock token holds. */
  async settleC2d(deviceId: string, lockToken: string, outcome: C2dOutcome): Promise<void> {
    const lock = this.c2dLocks.get(deviceId);
    if (!lock || lock.lockToken !== lockToken || lock.until <= this.now()) {
      throw new HubError('DeviceMessageLockLost', 'the lock token is not the one of a message locked for this device (expired, settled or never given)');
    }
    this.c2dLocks.delete(deviceId);
    if (outcome === 'abandon') return;
    await this.store.completeC2d(deviceId, lock.message.id);
    await this.c2dFeedback(deviceId, lock.message, outcome === 'complete' ? 'Success' : 'Rejected');
  }

  /**
   * A message settled for good, or dead-lettered: when its sender asked for an acknowledgement
   * (`iothub-ack`: positive or full for a completion, negative or full for anything else), a
   * feedback record goes to the service side's feedback receivers.
   */
  private async c2dFeedback(deviceId: string, message: C2dMessage, status: Exclude<FeedbackRecord['statusCode'], 'Purged'>): Promise<void> {
    const ack = message.properties['iothub-ack'];
    const wanted = status === 'Success' ? ack === 'positive' || ack === 'full' : ack === 'negative' || ack === 'full';
    if (!wanted) return;
    const identity = await this.store.getIdentity(deviceId);
    const kept: KeptFeedback = {
      id: randomUUID(),
      record: {
        originalMessageId: message.system.messageId ?? message.id,
        deviceGenerationId: identity?.generationId ?? '',
        deviceId,
        enqueuedTimeUtc: new Date(this.now()).toISOString(),
        statusCode: status,
        description: FEEDBACK_DESCRIPTIONS[status],
      },
    };
    await this.store.keepFeedback(kept);
    await this.bus.publish({ type: 'feedback', kept });
  }

  /** Feedback a receiver did not take before the hub last stopped waits for the next one. */
  async restoreFeedback(): Promise<void> {
    for (const kept of await this.store.keptFeedback()) this.feedback.add(kept);
  }

  /** The service took (accepted or rejected) a feedback record: it is gone for good. */
  feedbackTaken(kept: KeptFeedback): Promise<void> {
    return this.store.dropFeedback(kept.id);
  }

  async recordTelemetry(identity: Identity, bag: PropertyBag, payload: Buffer, topicBytes: number): Promise<void> {
    if (payload.length + topicBytes > MAX_TELEMETRY_BYTES) {
      throw new HubError('MessageTooLarge', `the message is larger than ${MAX_TELEMETRY_BYTES} bytes`);
    }
    const { body, bodyEncoding } = describeBody(payload);
    // Built field by field (no spreads): this runs for every message.
    const message = {
      deviceId: identity.deviceId,
      moduleId: identity.moduleId,
      enqueuedTimeUtc: isoNow(),
      system: bag.system,
      properties: bag.properties,
      body,
      bodyEncoding,
    };
    await this.bus.publish({ type: 'telemetry', message });
    this.settings.count?.('telemetry');
  }

  /** `POST /devices/{id}/files`: where to upload `blobName` (a SAS URI into the file-upload container). */
  startFileUpload(deviceId: string, body: unknown): Promise<FileUploadGrant> {
    return this.files.start(deviceId, body);
  }

  /** `POST /devices/{id}/files/notifications`: the device's upload is done; a successful one is notified to the service side. */
  async completeFileUpload(deviceId: string, correlationId: string | undefined, body: unknown): Promise<void> {
    const notification = await this.files.complete(deviceId, correlationId, body);
    if (notification) await this.bus.publish({ type: 'file-notification', notification });
  }

  methodResponse(rid: string, origin: string, status: number, payload: Buffer): Promise<void> {
    let value: JsonValue = null;
    if (payload.length > 0) {
      try {
        value = JSON.parse(payload.toString('utf8')) as JsonValue;
      } catch {
        value = payload.toString('utf8');
      }
    }
    return this.bus.publish({ type: 'method-response', rid, status, payload: value, origin });
  }

  // ---- service side ------------------------------------------------------

  /**
   * `Authorization: SharedAccessSignature sr=<host>&sig=…&se=…&skn=<policy>`, signed
   * with a key of a policy that holds `right` (any service-side right when none is named).
   * Throws ServiceRefused: the caller sees only the real hub's `Unauthorized`.
   */
  async authenticateService(authorization: string | undefined, right?: Right): Promise<string> {
    const token = authorization ? parseSasToken(authorization) : undefined;
    if (!token) throw new ServiceRefused('a SharedAccessSignature Authorization header is required');
    if (isExpired(token)) throw new ServiceRefused('the SAS token has expired');
    if (!token.keyName) throw new ServiceRefused('the token must be signed with a hub policy key (skn=<policy>)');
    const rights: Right[] = right ? [right] : ['registryRead', 'registryWrite', 'serviceConnect'];
    if (!rights.some((r) => hasRight(token.keyName!, r))) throw new ServiceRefused(`policy ${token.keyName} lacks ${rights.join(' or ')}`);
    if (!resourceCovers(token.resource, this.settings.hostName) || token.resource.includes('/'))
      throw new ServiceRefused(`the token is for ${token.resource}, not ${this.settings.hostName}`);
    const policy = (await this.store.policies())[token.keyName];
    if (!policy || ![policy.primaryKey, policy.secondaryKey].some((k) => signedWith(token, k))) throw new ServiceRefused('the SAS signature does not match');
    return token.keyName;
  }

  /** GET /devices?top=: devices (not modules), in id order. */
  async listDevices(top: number) {
    const records = await this.store.listIdentities();
    return Promise.all(records.slice(0, top).map((r) => this.describe(r)));
  }

  /** GET /devices/{id}/modules. */
  async listModules(deviceId: string) {
    await this.identity(deviceId);
    return Promise.all((await this.store.listIdentities(deviceId)).map((r) => this.describe(r)));
  }

  async identity(key: string): Promise<IdentityRecord> {
    const record = await this.store.getIdentity(key);
    if (!record) throw notFound(parseIdentityKey(key) ?? { deviceId: key });
    return record;
  }

  async describe(record: IdentityRecord) {
    const key = identityKey(record);
    return deviceView(record, await this.store.isOnline(key), record.moduleId ? 0 : await this.store.pendingC2d(record.deviceId, this.now()));
  }

  /** PUT /devices/{id}[/modules/{mid}]: create, or update with If-Match. */
  async putIdentity(identity: Identity, body: unknown, ifMatch: string | undefined): Promise<IdentityRecord> {
    validateId(identity.deviceId, 'deviceId');
    if (identity.moduleId !== undefined) validateId(identity.moduleId, 'moduleId');
    const input = (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) as IdentityInput & { deviceId?: unknown; moduleId?: unknown };
    if (body !== undefined && body !== null && (typeof body !== 'object' || Array.isArray(body))) throw invalidArgument('the body must be a JSON object');
    if (input.deviceId !== undefined && input.deviceId !== identity.deviceId) throw invalidArgument('deviceId in the body differs from the path');
    if (input.moduleId !== undefined && input.moduleId !== identity.moduleId) throw invalidArgument('moduleId in the body differs from the path');
    const key = identityKey(identity);
    if (ifMatch === undefined) {
      if (identity.moduleId) await this.identity(identity.deviceId);
      return this.store.createIdentity(createIdentityRecord(identity, input));
    }
    const record = await this.store.updateIdentity(key, (r) => {
      checkIfMatch(ifMatch, r.etag);
      return updateIdentityRecord(r, input);
    });
    if (record.status === 'disabled') await this.bus.publish({ type: 'revoked', key });
    return record;
  }

  async regenerateIdentityKey(key: string, which: unknown): Promise<IdentityRecord> {
    const record = await this.store.updateIdentity(key, (r) => regenerateKey(r, which));
    // Connections signed with a replaced key must not outlive it.
    await this.bus.publish({ type: 'revoked', key });
    return record;
  }

  async deleteIdentity(key: string, ifMatch: string | undefined): Promise<void> {
    const record = await this.identity(key);
    checkIfMatch(ifMatch, record.etag);
    const modules = record.moduleId ? [] : await this.store.listIdentities(record.deviceId);
    if (!(await this.store.deleteIdentity(key))) throw notFound(record);
    for (const gone of [key, ...modules.map(identityKey)]) await this.bus.publish({ type: 'revoked', key: gone });
  }

  // ---- CA certificates (X.509 devices signed by a CA): the real hub's certificates API ----

  async listCaCertificates() {
    return { value: Object.values(await this.store.caCertificates()).map(caCertificateView) };
  }

  async caCertificate(name: string) {
    return caCertificateView(caCertificateNamed(await this.store.caCertificates(), name));
  }

  /** PUT: a new CA certificate (without If-Match), or a replacement of the one whose etag If-Match names. */
  async putCaCertificate(name: string, body: unknown, ifMatch: string | undefined) {
    validateCertificateName(name);
    const all = await this.store.updateCaCertificates((current) => {
      const existing = current[name];
      if (existing) checkIfMatch(ifMatch ?? '', existing.etag);
      return { ...current, [name]: putCaCertificate(existing, name, body) };
    });
    return caCertificateView(all[name]!);
  }

  async deleteCaCertificate(name: string, ifMatch: string | undefined): Promise<void> {
    await this.store.updateCaCertificates((current) => {
      checkIfMatch(ifMatch, caCertificateNamed(current, name).etag);
      const { [name]: _gone, ...rest } = current;
      return rest;
    });
  }

  /** The proof-of-possession steps: a code, then a certificate with that CN signed by the CA's key. */
  async generateVerificationCode(name: string, ifMatch: string | undefined) {
    return this.changeCaCertificate(name, ifMatch, (record) => withVerificationCode(record));
  }

  async verifyCaCertificate(name: string, body: unknown, ifMatch: string | undefined) {
    return this.changeCaCertificate(name, ifMatch, (record) => verifyCaCertificate(record, body));
  }

  private async changeCaCertificate(name: string, ifMatch: string | undefined, change: (record: CaCertificateRecord) => CaCertificateRecord) {
    const all = await this.store.updateCaCertificates((current) => {
      const record = caCertificateNamed(current, name);
      checkIfMatch(ifMatch, record.etag);
      return { ...current, [name]: change(record) };
    });
    return caCertificateView(all[name]!);
  }

  async serviceTwin(key: string) {
    return this.serviceTwinOf(await this.identity(key));
  }

  private async serviceTwinOf(record: IdentityRecord) {
    return serviceTwinView(
      record,
      await this.store.isOnline(identityKey(record)),
      record.moduleId ? 0 : await this.store.pendingC2d(record.deviceId, this.now()),
      authenticationView(record),
    );
  }

  /** PATCH (merge) or PUT (replace) /twins/{id}: tags and desired; desired changes reach the device. */
  async updateServiceTwin(key: string, body: unknown, ifMatch: string | undefined, replace: boolean) {
    const update = parseServiceTwinUpdate(body);
    let push: Record<string, JsonValue> | undefined;
    await this.store.updateIdentity(key, (r) => {
      checkIfMatch(ifMatch, r.twin.etag);
      const change = updateDesiredProperties(r.twin, update, this.settings.limits, replace);
      push = change.push;
      return { ...r, twin: change.twin };
    });
    if (push) await this.bus.publish({ type: 'desired', key, patch: push });
    return this.serviceTwin(key);
  }

  async sendC2d(deviceId: string, body: unknown) {
    const record = await this.identity(deviceId);
    if (record.moduleId) throw invalidArgument('cloud-to-device messages go to devices, not modules');
    const now = this.now();
    const message = createC2dMessage(deviceId, body, this.settings.c2dTtlSeconds, now);
    await this.deadLettered(deviceId, await this.store.enqueueC2d(deviceId, message, now));
    await this.bus.publish({ type: 'c2d', deviceId });
    this.settings.count?.('c2d-sent');
    return { messageId: message.system.messageId, enqueuedTimeUtc: message.enqueuedTimeUtc, expiryTimeUtc: message.system.expiryTimeUtc };
  }

  /** POST /twins/{id}/methods: `{methodName, responseTimeoutInSeconds, payload}` → `{status, payload}`. */
  async invokeMethod(key: string, body: unknown): Promise<{ status: number; payload: JsonValue }> {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidArgument('the body must be a JSON object');
    const request = body as { methodName?: unknown; responseTimeoutInSeconds?: unknown; payload?: unknown };
    if (typeof request.methodName !== 'string' || !/^[^/?#+\s]{1,128}$/.test(request.methodName)) {
      throw invalidArgument('methodName must be 1 to 128 characters without / ? # + or spaces');
    }
    const timeout = request.responseTimeoutInSeconds ?? 30;
    if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 1 || timeout > 300) {
      throw invalidArgument('responseTimeoutInSeconds must be an integer from 1 to 300');
    }
    const payload = (request.payload ?? null) as JsonValue;
    if (Buffer.byteLength(JSON.stringify(payload)) > MAX_METHOD_PAYLOAD_BYTES)
      throw invalidArgument(`the payload is larger than ${MAX_METHOD_PAYLOAD_BYTES} bytes`);
    await this.identity(key);
    if (!(await this.store.isOnline(key))) throw new HubError('DeviceNotOnline', `${key} is not connected`);
    const rid = randomUUID().replace(/-/g, '');
    const result = new Promise<{ status: number; payload: JsonValue }>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pendingMethods.delete(rid);
        reject(new HubError('GatewayTimeout', `${key} did not answer ${request.methodName} within ${timeout} s`));
      }, timeout * 1000);
      this.pendingMethods.set(rid, { resolve, reject, timer });
    });
    await this.bus.publish({
      type: 'method-request',
      key,
      rid,
      methodName: request.methodName,
      payload,
      origin: this.settings.replicaId,
      timeoutMs: timeout * 1000,
    });
    this.settings.count?.('method-invoked');
    return result;
  }

  /**
   * POST /devices/query: the query's results from `continuation` on, at most `pageSize`
   * of them, and the token of the next page when there is one.
   */
  async queryDevices(text: unknown, pageSize: number, continuation: string | undefined): Promise<{ items: JsonValue[]; continuation?: string }> {
    const query = parseQuery(text);
    const start = continuation === undefined ? 0 : continuationOffset(continuation);
    const devices = await this.store.listIdentities();
    const records = query.collection === 'devices' ? devices : (await Promise.all(devices.map((d) => this.store.listIdentities(d.deviceId)))).flat();
    const documents = await Promise.all(records.map((r) => this.serviceTwinOf(r)));
    const results = runQuery(query, documents as JsonValue[]);
    const items = results.slice(start, start + pageSize);
    const next = start + items.length;
    return { items, ...(next < results.length ? { continuation: Buffer.from(JSON.stringify({ offset: next })).toString('base64') } : {}) };
  }

  /** GET /statistics/devices. */
  async registryStatistics() {
    const devices = await this.store.listIdentities();
    const enabledDeviceCount = devices.filter((d) => d.status === 'enabled').length;
    return { totalDeviceCount: devices.length, enabledDeviceCount, disabledDeviceCount: devices.length - enabledDeviceCount };
  }

  /** GET /statistics/service. */
  async serviceStatistics() {
    const devices = await this.store.listIdentities();
    const online = await Promise.all(devices.map((d) => this.store.isOnline(d.deviceId)));
    return { connectedDeviceCount: online.filter(Boolean).length };
  }

  /** The demo device of `--demo-device`: made when missing (by whichever replica comes first). */
  async ensureDevice(deviceId: string): Promise<IdentityRecord> {
    const existing = await this.store.getIdentity(deviceId);
    if (existing) return existing;
    try {
      return await this.store.createIdentity(createIdentityRecord({ deviceId }));
    } catch {
      // Another replica made it first.
      return this.identity(deviceId);
    }
  }

  /** The primary key of a shared access policy, for the connection strings printed at start. */
  async policyKey(name: string): Promise<string> {
    return (await this.store.policies())[name]!.primaryKey;
  }

  /** Pending method calls fail, then the bus and the store close. */
  async close(): Promise<void> {
    for (const [rid, pending] of this.pendingMethods) {
      clearTimeout(pending.timer);
      pending.reject(new HubError('GatewayTimeout', 'the hub is shutting down'));
      this.pendingMethods.delete(rid);
    }
    await this.bus.close();
    await this.store.close();
    this.logger.debug('hub closed');
  }
}
