/**
 * The device links of AMQP, as the device SDK's Amqp transport attaches them
 * under `/devices/{id}[/modules/{mid}]/`: `messages/events` (telemetry in),
 * `messages/devicebound` (C2D out, settled by the device's disposition:
 * accepted completes, rejected rejects, released or modified abandons),
 * `twin` (requests in, answers and desired pushes out, told apart by
 * correlation id) and `methods/devicebound` (requests out, answers in).
 */
import { randomUUID } from 'node:crypto';
import type { Delivery, Message, Receiver, Sender } from 'rhea';
import type { Logger } from 'pino';
import type { HubEvent } from '../domain/bus.ts';
import type { C2dDelivery, C2dOutcome } from '../domain/c2d.ts';
import { HubError, invalidArgument } from '../domain/errors.ts';
import type { DeviceHub } from '../domain/hub.ts';
import type { C2dMessage } from '../domain/messages.ts';
import { identityKey, type Identity } from '../domain/registry.ts';
import { deviceErrorBody, toHubError } from '../errors.ts';
import { deviceAddress, refuseLink, type AmqpClient } from './endpoint.ts';
import { bodyBytes, c2dAmqpMessage, idText, jsonSection, telemetryBag } from './messages.ts';

const DESIRED_NOTIFICATIONS = '/notifications/twin/properties/desired';

/** One device or module connected over AMQP on this replica. */
interface AmqpDevice {
  client: AmqpClient;
  identity: Identity;
  key: string;
  connectionId: string;
  c2d?: { sender: Sender; delivery: C2dDelivery; waiting?: C2dMessage };
  twin?: Sender;
  desired: boolean;
  methods?: Sender;
  /** Method request ids sent to this device, and the replica waiting for each answer. */
  methodOrigins: Map<string, string>;
  /** Telemetry and twin requests of one device are handled in order. */
  tail: Promise<unknown>;
}

const OUTCOMES = { accepted: 'complete', rejected: 'reject', released: 'abandon' } as const;

export class DeviceLinks {
  /** The identity's AMQP connection on this replica, by key. */
  private readonly online = new Map<string, AmqpDevice>();
  private readonly byClient = new WeakMap<AmqpClient, Map<string, AmqpDevice>>();
  private readonly c2dDeliveries = new WeakMap<Delivery, AmqpDevice>();
  private readonly bookkeeping = new Set<Promise<unknown>>();

  constructor(
    private readonly hub: DeviceHub,
    private readonly logger: Logger,
  ) {}

  /** A put-token for a device or module succeeded: it is that identity's one connection now. */
  async connected(client: AmqpClient, identity: Identity): Promise<void> {
    const key = identityKey(identity);
    const device: AmqpDevice = { client, identity, key, connectionId: randomUUID(), desired: false, methodOrigins: new Map(), tail: Promise.resolve() };
    let mine = this.byClient.get(client);
    if (!mine) this.byClient.set(client, (mine = new Map()));
    mine.set(key, device);
    this.online.set(key, device);
    await this.hub.deviceConnected({ identity, key, twinAllowed: true }, device.connectionId, false);
  }

  disconnected(client: AmqpClient): void {
    const mine = this.byClient.get(client);
    if (!mine) return;
    this.byClient.delete(client);
    for (const device of mine.values()) {
      device.c2d?.delivery.close();
      if (this.online.get(device.key) !== device) continue;
      this.online.delete(device.key);
      this.track(this.hub.deviceDisconnected(device.key, device.connectionId));
    }
  }

  /** Waits for the presence updates of connections that went. */
  async flush(): Promise<void> {
    await Promise.allSettled([...this.bookkeeping]);
  }

  private track(work: Promise<unknown>): void {
    const tracked = work.catch((err: unknown) => this.logger.error({ err }, 'AMQP bookkeeping failed')).finally(() => this.bookkeeping.delete(tracked));
    this.bookkeeping.add(tracked);
  }

  /** The device of a link address, when this connection holds its token; undefined when the address is not a device's. */
  private deviceOf(client: AmqpClient, address: string): { device?: AmqpDevice; rest: string } | undefined {
    const parsed = deviceAddress(address);
    if (!parsed) return undefined;
    return { device: this.byClient.get(client)?.get(identityKey(parsed.identity)), rest: parsed.rest };
  }

  /** A link the device receives on (we send). False when the address is not a device's. */
  senderOpened(client: AmqpClient, sender: Sender, address: string): boolean {
    const found = this.deviceOf(client, address);
    if (!found) return false;
    const { device, rest } = found;
    if (!device) {
      refuseLink(sender, new HubError('IotHubUnauthorizedAccess', `no token was put for ${address.slice(0, 256)}`));
      return true;
    }
    if (rest === 'messages/devicebound' && !device.identity.moduleId) {
      const c2d: AmqpDevice['c2d'] = {
        sender,
        delivery: this.hub.c2dDelivery(device.identity.deviceId, (message) => {
          c2d!.waiting = message;
          this.sendWaiting(device);
        }),
      };
      device.c2d = c2d;
      void c2d.delivery.subscribe();
    } else if (rest === 'twin') device.twin = sender;
    else if (rest === 'methods/devicebound') device.methods = sender;
    else if (rest !== 'messages/devicebound') refuseLink(sender, new HubError('DeviceNotFound', `no node ${address.slice(0, 256)}`));
    return true;
  }

  /** A link the device sends on (we receive). */
  receiverOpened(client: AmqpClient, receiver: Receiver, address: string): boolean {
    const found = this.deviceOf(client, address);
    if (!found) return false;
    if (!found.device) refuseLink(receiver, new HubError('IotHubUnauthorizedAccess', `no token was put for ${address.slice(0, 256)}`));
    else if (!['messages/events', 'twin', 'methods/devicebound'].includes(found.rest))
      refuseLink(receiver, new HubError('DeviceNotFound', `no node ${address.slice(0, 256)}`));
    return true;
  }

  linkClosed(client: AmqpClient, link: Sender | Receiver): void {
    for (const device of this.byClient.get(client)?.values() ?? []) {
      if (device.c2d?.sender === link) {
        device.c2d.delivery.close();
        device.c2d = undefined;
      }
      if (device.twin === link) {
        device.twin = undefined;
        device.desired = false;
      }
      if (device.methods === link) device.methods = undefined;
    }
  }

  /** A message from a device; false when the link is not a device's. */
  onMessage(client: AmqpClient, _receiver: Receiver, delivery: Delivery, message: Message, address: string): boolean {
    const found = this.deviceOf(client, address);
    if (!found) return false;
    const { device, rest } = found;
    if (!device) {
      delivery.reject({ condition: 'amqp:unauthorized-access', description: 'no token was put for this device' });
      return true;
    }
    const work = async () => {
      if (rest === 'messages/events') await this.hub.recordTelemetry(device.identity, telemetryBag(message), bodyBytes(message.body), 0);
      else if (rest === 'twin') await this.answerTwin(device, message);
      else if (rest === 'methods/devicebound') await this.methodAnswered(device, message);
    };
    const next = device.tail.then(work, work);
    device.tail = next.catch(() => undefined);
    next.then(
      () => delivery.accept(),
      (err: unknown) => {
        if (!(err instanceof HubError)) this.logger.error({ err, key: device.key }, 'AMQP device message failed');
        const error = toHubError(err);
        delivery.reject({ condition: error.status === 413 ? 'amqp:link:message-size-exceeded' : 'com.microsoft:argument-error', description: error.message });
      },
    );
    return true;
  }

  private async answerTwin(device: AmqpDevice, message: Message): Promise<void> {
    const annotations = (message.message_annotations ?? {}) as Record<string, unknown>;
    const operation = String(annotations.operation ?? '');
    const resource = annotations.resource;
    let status = 200;
    let body: unknown;
    let version: number | undefined;
    try {
      if (operation === 'GET') body = await this.hub.deviceTwin(device.key);
      else if (operation === 'PATCH' && resource === '/properties/reported') {
        version = await this.hub.patchReported(device.key, bodyBytes(message.body));
        status = 204;
      } else if ((operation === 'PUT' || operation === 'DELETE') && resource === DESIRED_NOTIFICATIONS) device.desired = operation === 'PUT';
      else throw invalidArgument(`twin operation ${operation.slice(0, 64)} on ${String(resource).slice(0, 128)} is not supported`);
    } catch (err) {
      const error = toHubError(err);
      if (!(err instanceof HubError)) this.logger.error({ err, key: device.key }, 'twin operation failed');
      status = error.status;
      body = JSON.parse(deviceErrorBody(error));
    }
    device.twin?.send({
      correlation_id: message.correlation_id,
      message_annotations: { status, ...(version === undefined ? {} : { version }) },
      ...(body === undefined ? {} : { body: jsonSection(body) }),
    } as Message);
  }

  private async methodAnswered(device: AmqpDevice, message: Message): Promise<void> {
    const rid = idText(message.correlation_id) ?? '';
    const origin = device.methodOrigins.get(rid);
    if (origin === undefined) return;
    device.methodOrigins.delete(rid);
    const status = Number(((message.application_properties ?? {}) as Record<string, unknown>)['IoThub-status']);
    await this.hub.methodResponse(rid, origin, Number.isInteger(status) ? status : 500, bodyBytes(message.body));
  }

  private sendWaiting(device: AmqpDevice): void {
    const c2d = device.c2d;
    if (!c2d?.waiting || !c2d.sender.sendable()) return;
    const delivery = c2d.sender.send(c2dAmqpMessage(c2d.waiting));
    c2d.waiting = undefined;
    this.c2dDeliveries.set(delivery, device);
  }

  onSendable(sender: Sender): void {
    for (const device of this.online.values()) if (device.c2d?.sender === sender) this.sendWaiting(device);
  }

  /** The device's disposition of a C2D message. */
  onSettled(delivery: Delivery, outcome: keyof typeof OUTCOMES): void {
    const device = this.c2dDeliveries.get(delivery);
    if (!device?.c2d) return;
    this.c2dDeliveries.delete(delivery);
    const settled: C2dOutcome = OUTCOMES[outcome];
    void device.c2d.delivery.settle(settled);
  }

  onHubEvent(event: HubEvent): void {
    switch (event.type) {
      case 'c2d':
        void this.online.get(event.deviceId)?.c2d?.delivery.pump();
        return;
      case 'desired': {
        const device = this.online.get(event.key);
        if (device?.desired) device.twin?.send({ body: jsonSection(event.patch) } as Message);
        return;
      }
      case 'method-request': {
        const device = this.online.get(event.key);
        if (!device) return;
        if (!device.methods) {
          this.track(this.hub.methodNotSubscribed(event.rid, event.origin));
          return;
        }
        device.methodOrigins.set(event.rid, event.origin);
        setTimeout(() => device.methodOrigins.delete(event.rid), event.timeoutMs).unref();
        device.methods.send({
          correlation_id: event.rid,
          application_properties: { 'IoThub-methodname': event.methodName },
          body: jsonSection(event.payload),
        } as Message);
        return;
      }
      case 'connected': {
        const device = this.online.get(event.key);
        if (device && device.connectionId !== event.connectionId) this.close(device);
        return;
      }
      case 'revoked': {
        const device = this.online.get(event.key);
        if (device) this.close(device);
        return;
      }
      default:
        return;
    }
  }

  /** A newer connection of the identity, or a revoked identity: the connection closes, as over MQTT. */
  private close(device: AmqpDevice): void {
    this.online.delete(device.key);
    device.c2d?.delivery.close();
    device.client.connection.close({ condition: 'amqp:unauthorized-access', description: `${device.key} connected elsewhere or was revoked` });
  }
}
