/**
 * The service side of AMQP, as the service SDK's Client attaches it after a
 * put-token for the hub with a policy holding serviceConnect:
 * `/messages/devicebound` (C2D messages in, each addressed by its `to`), and two
 * queues out, each message gone once the service accepts it:
 * `/messages/serviceBound/feedback` (delivery feedback, one record per message) and
 * `/messages/serviceBound/filenotifications` (one per successful file upload).
 */
import type { Delivery, Message, Receiver, Sender } from 'rhea';
import type { Logger } from 'pino';
import { HubError } from '../domain/errors.ts';
import type { DeviceHub } from '../domain/hub.ts';
import type { ServiceQueue } from '../domain/service-queue.ts';
import { amqpCondition } from '../errors.ts';
import { deviceAddress, refuseLink, type AmqpClient } from './endpoint.ts';
import { c2dRequest, jsonSection } from './messages.ts';

const DEVICEBOUND = '/messages/devicebound';
const FEEDBACK = '/messages/servicebound/feedback';
const FILE_NOTIFICATIONS = '/messages/servicebound/filenotifications';

/** A queue of the hub the service side receives from, and the receivers attached to it. */
interface Outbox {
  senders: Set<Sender>;
  /** The oldest item as a message, taken out, what to do once the service took it, and how to give it back; undefined when empty. */
  next(): Sent | undefined;
}

interface Sent {
  message: Message;
  taken(): void;
  giveBack(): void;
}

function outbox<T>(queue: ServiceQueue<T>, toMessage: (item: T) => Message, onArrival: (box: Outbox) => void, onTaken?: (item: T) => void): Outbox {
  const box: Outbox = {
    senders: new Set(),
    next() {
      const item = queue.take();
      if (item === undefined) return undefined;
      return {
        message: toMessage(item),
        taken: () => onTaken?.(item),
        giveBack() {
          queue.giveBack(item);
          onArrival(box);
        },
      };
    },
  };
  queue.follow(() => onArrival(box));
  return box;
}

export class ServiceLinks {
  private readonly outboxes: Map<string, Outbox>;
  /** The item each unsettled delivery carries. */
  private readonly inFlight = new WeakMap<Delivery, Sent>();

  constructor(
    private readonly hub: DeviceHub,
    private readonly logger: Logger,
  ) {
    const send = (box: Outbox) => this.send(box);
    this.outboxes = new Map([
      // The service SDK's feedback receiver reads a batch: a JSON array of records.
      [
        FEEDBACK,
        outbox(
          hub.feedback,
          ({ record }) => ({ body: jsonSection([record]), content_type: 'application/vnd.microsoft.iothub.feedback.json' }) as Message,
          send,
          (kept) => void hub.feedbackTaken(kept).catch((err: unknown) => logger.error({ err }, 'feedback taken, but not dropped from the store')),
        ),
      ],
      [
        FILE_NOTIFICATIONS,
        outbox(hub.fileNotifications, (notification) => ({ body: jsonSection(notification), content_type: 'application/json' }) as Message, send),
      ],
    ]);
  }

  private refused(client: AmqpClient, link: Sender | Receiver): boolean {
    if (client.service) return false;
    refuseLink(link, new HubError('IotHubUnauthorizedAccess', 'put a token of a policy with serviceConnect for the hub first'));
    return true;
  }

  senderOpened(client: AmqpClient, sender: Sender, address: string): boolean {
    const box = this.outboxes.get(address.toLowerCase());
    if (!box) return false;
    if (this.refused(client, sender)) return true;
    box.senders.add(sender);
    this.send(box);
    return true;
  }

  receiverOpened(client: AmqpClient, receiver: Receiver, address: string): boolean {
    if (address.toLowerCase() !== DEVICEBOUND) return false;
    this.refused(client, receiver);
    return true;
  }

  linkClosed(link: Sender | Receiver): void {
    for (const box of this.outboxes.values()) box.senders.delete(link as Sender);
  }

  disconnected(client: AmqpClient): void {
    for (const outbox of this.outboxes.values())
      for (const sender of outbox.senders) if (sender.connection === client.connection) outbox.senders.delete(sender);
  }

  /** A C2D message from the service: queued for the device its `to` names. */
  onMessage(client: AmqpClient, delivery: Delivery, message: Message, address: string): void {
    if (address.toLowerCase() !== DEVICEBOUND || !client.service) {
      delivery.reject({ condition: 'amqp:not-allowed', description: `no messages are taken on ${address.slice(0, 256)}` });
      return;
    }
    const target = deviceAddress(String(message.to ?? ''));
    const sent =
      target && target.rest === 'messages/devicebound' && !target.identity.moduleId
        ? this.hub.sendC2d(target.identity.deviceId, c2dRequest(message))
        : Promise.reject(new HubError('ArgumentInvalid', 'to must be /devices/{deviceId}/messages/devicebound'));
    sent.then(
      () => delivery.accept(),
      (err: unknown) => {
        if (!(err instanceof HubError)) this.logger.error({ err }, 'AMQP C2D send failed');
        delivery.reject(amqpCondition(err));
      },
    );
  }

  private send(box: Outbox): void {
    for (const sender of box.senders) {
      while (sender.sendable()) {
        const next = box.next();
        if (!next) return;
        this.inFlight.set(sender.send(next.message), next);
      }
    }
  }

  onSendable(sender: Sender): void {
    for (const box of this.outboxes.values()) if (box.senders.has(sender)) this.send(box);
  }

  /** An item the service did not take (released: the SDK's abandon) is given back for the next receiver; one it took is gone. */
  onSettled(delivery: Delivery, outcome: 'accepted' | 'rejected' | 'released'): void {
    const sent = this.inFlight.get(delivery);
    if (!sent) return;
    this.inFlight.delete(delivery);
    if (outcome === 'released') sent.giveBack();
    else sent.taken();
  }
}
