/** One connected device or module, and the endpoint's table of them. */
import { randomUUID } from 'node:crypto';
import type { Client, PublishPacket } from 'aedes';
import type { Logger } from 'pino';
import type { C2dDelivery } from '../domain/c2d.ts';
import type { DeviceConnection, DeviceHub } from '../domain/hub.ts';
import type { SubscriptionKind } from './topics.ts';
import { SerialQueue } from '../../common/serial-queue.ts';

export class DeviceSession {
  readonly connectionId = randomUUID();
  readonly subscriptions = new Set<SubscriptionKind>();
  /** Method request ids sent to this device, and the replica waiting for each answer. */
  readonly methodOrigins = new Map<string, string>();
  /** Devices only: modules get no cloud-to-device messages. */
  c2d: C2dDelivery | undefined;
  closed = false;
  private readonly publishes = new SerialQueue();

  constructor(
    readonly client: Client,
    readonly connection: DeviceConnection,
    /** CleanSession 0: the C2D subscription outlives the connection. */
    readonly keepSession: boolean,
  ) {}

  get key(): string {
    return this.connection.key;
  }

  /** Publishes from one device are handled in order, even when aedes reads several at once. */
  serially<T>(task: () => Promise<T>): Promise<T> {
    return this.publishes.run(task);
  }

  /** Straight to this one client: the hub is not a broker, nothing goes through aedes' routing. */
  send(topic: string, payload: string | Buffer, qos: 0 | 1 = 0): void {
    const packet: PublishPacket = { cmd: 'publish', topic, payload, qos, retain: false, dup: false };
    this.client.publish(packet, () => undefined);
  }
}

/** Sessions by aedes client (from CONNECT on) and by identity key (while online). */
export class Sessions {
  private readonly byClient = new WeakMap<Client, DeviceSession>();
  private readonly online = new Map<string, DeviceSession>();

  of(client: Client | null | undefined): DeviceSession | undefined {
    return client ? this.byClient.get(client) : undefined;
  }

  accepted(session: DeviceSession): void {
    this.byClient.set(session.client, session);
  }

  /** The identity's current connection on this replica. */
  get(key: string): DeviceSession | undefined {
    return this.online.get(key);
  }

  setOnline(session: DeviceSession): void {
    this.online.set(session.key, session);
  }

  /** False when a newer connection of the identity has taken the place already. */
  setOffline(session: DeviceSession): boolean {
    if (this.online.get(session.key) !== session) return false;
    this.online.delete(session.key);
    return true;
  }

  all(): DeviceSession[] {
    return [...this.online.values()];
  }
}

/** What every packet handler works with. */
export interface EndpointContext {
  hub: DeviceHub;
  sessions: Sessions;
  logger: Logger;
}
