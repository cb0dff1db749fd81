/**
 * Where the hub keeps its state, as the domain sees it. The implementations
 * live in ../persistence: files in the data dir (embedded default) or Redis
 * (scale-out, shared by every replica).
 */
import type { C2dMessage, DeadC2d } from './messages.ts';
import type { Policies } from './policies.ts';
import type { KeptFeedback } from './service-queue.ts';
import type { IdentityRecord } from './registry.ts';
import type { CaCertificates } from './x509.ts';

/** Feedback records kept for receivers that have not come yet. */
export const MAX_KEPT_FEEDBACK = 10_000;

export type IdentityChange = (record: IdentityRecord) => IdentityRecord;

export interface HubStore {
  getIdentity(key: string): Promise<IdentityRecord | undefined>;
  /** Devices (no modules), or the modules of one device. */
  listIdentities(modulesOf?: string): Promise<IdentityRecord[]>;
  /** Fails with DeviceAlreadyExists / ModuleAlreadyExistsOnDevice. */
  createIdentity(record: IdentityRecord): Promise<IdentityRecord>;
  /** Read-modify-write, serialised per identity; `change` may throw to leave it untouched. */
  updateIdentity(key: string, change: IdentityChange): Promise<IdentityRecord>;
  /** Deletes an identity (a device takes its modules along); false when absent. */
  deleteIdentity(key: string): Promise<boolean>;
  /** The hub's shared access policies, made on first use (`iothubowner`). */
  policies(): Promise<Policies>;
  /** The CA certificates uploaded to the hub, by name. */
  caCertificates(): Promise<CaCertificates>;
  /** Read-modify-write of them, serialised; `change` may throw to leave them untouched. */
  updateCaCertificates(change: (current: CaCertificates) => CaCertificates): Promise<CaCertificates>;

  /** Queues a message (DeviceMaximumQueueDepthExceeded when full); the expired ones it takes out are returned. */
  enqueueC2d(deviceId: string, message: C2dMessage, now: number): Promise<DeadC2d[]>;
  /** The oldest pending message that has not expired, left where it is. */
  nextC2d(deviceId: string, now?: number): Promise<C2dMessage | undefined>;
  /** A delivery (`claimC2d` of messages.ts, stored): the message to hand out, with its delivery counted, and the dead ones taken out. */
  claimC2d(deviceId: string, now: number, maxDeliveries: number): Promise<{ message: C2dMessage | undefined; dead: DeadC2d[] }>;
  completeC2d(deviceId: string, id: string): Promise<void>;
  /** Messages pending (not expired at `now`). */
  pendingC2d(deviceId: string, now?: number): Promise<number>;
  /** The C2D subscription a clean=false session keeps between connections. */
  setPersistentC2dSubscription(deviceId: string, kept: boolean): Promise<void>;
  hasPersistentC2dSubscription(deviceId: string): Promise<boolean>;

  /** Feedback not yet taken by the service (kept across restarts), oldest first; at most `MAX_KEPT_FEEDBACK`, the oldest go first. */
  keepFeedback(kept: KeptFeedback): Promise<void>;
  keptFeedback(): Promise<KeptFeedback[]>;
  /** The service took (accepted or rejected) this feedback record. */
  dropFeedback(id: string): Promise<void>;

  /** Which connection (on any replica) holds an identity now. */
  setOnline(key: string, connectionId: string): Promise<void>;
  setOffline(key: string, connectionId: string): Promise<void>;
  isOnline(key: string): Promise<boolean>;
  close(): Promise<void>;
}
