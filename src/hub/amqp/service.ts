/**
 * The service side of AMQP, as the service SDK's Client attaches it after a
 * put-token for the hub with a policy holding serviceConnect:
 * `/messages/devicebound` (C2D messages in, each addressed by its `to`), and
 * `/messages/serviceBound/feedback` (delivery feedback out, one record per
 * message, gone once the service accepts it). `/messages/serviceBound/filenotifications`
 * attaches and stays quiet: file upload is not served yet.
 */
import type { Delivery, Message, Receiver, Sender } from 'rhea';
import type { Logger } from 'pino';
import { HubError } from '../domain/errors.ts';
import type { DeviceHub } from '../domain/hub.ts';
import type { FeedbackRecord } from '../domain/service-queue.ts';
import { amqpCondition } from '../errors.ts';
import { deviceAddress, refuseLink, type AmqpClient } from './endpoint.ts';
import { c2dRequest, jsonSection } from './messages.ts';

const DEVICEBOUND = '/messages/devicebound';
const FEEDBACK = '/messages/servicebound/feedback';
const FILE_NOTIFICATIONS = '/messages/servicebound/filenotifications';

export class ServiceLinks {
  private readonly feedbackSenders = new Set<Sender>();
  private readonly inFlight = new WeakMap<Delivery, FeedbackRecord>();

  constructor(
    private readonly hub: DeviceHub,
    private readonly logger: Logger,
  ) {
    hub.feedback.follow(() => this.sendFeedback());
  }

  private refused(client: AmqpClient, link: Sender | Receiver): boolean {
    if (client.service) return false;
    refuseLink(link, new HubError('IotHubUnauthorizedAccess', 'put a token of a policy with serviceConnect for the hub first'));
    return true;
  }

  senderOpened(client: AmqpClient, sender: Sender, address: string): boolean {
    const node = address.toLowerCase();
    if (node !== FEEDBACK && node !== FILE_NOTIFICATIONS) return false;
    if (this.refused(client, sender)) return true;
    if (node === FEEDBACK) {
      this.feedbackSenders.add(sender);
      this.sendFeedback();
    }
    return true;
  }

  receiverOpened(client: AmqpClient, receiver: Receiver, address: string): boolean {
    if (address.toLowerCase() !== DEVICEBOUND) return false;
    this.refused(client, receiver);
    return true;
  }

  linkClosed(link: Sender | Receiver): void {
    this.feedbackSenders.delete(link as Sender);
  }

  disconnected(client: AmqpClient): void {
    for (const sender of this.feedbackSenders) if (sender.connection === client.connection) this.feedbackSenders.delete(sender);
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

  private sendFeedback(): void {
    for (const sender of this.feedbackSenders) {
      while (sender.sendable() && this.hub.feedback.size > 0) {
        const record = this.hub.feedback.take()!;
        const delivery = sender.send({ body: jsonSection([record]), content_type: 'application/vnd.microsoft.iothub.feedback.json' } as Message);
        this.inFlight.set(delivery, record);
      }
    }
  }

  onSendable(sender: Sender): void {
    if (this.feedbackSenders.has(sender)) this.sendFeedback();
  }

  /** A feedback record the service did not take (released) is given back for the next receiver. */
  onSettled(delivery: Delivery, outcome: 'accepted' | 'rejected' | 'released'): void {
    const record = this.inFlight.get(delivery);
    if (!record) return;
    this.inFlight.delete(delivery);
    if (outcome === 'released') this.hub.feedback.giveBack(record);
  }
}
