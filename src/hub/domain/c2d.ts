/**
 * Cloud-to-device delivery to one device connection: one message in flight at
 * a time, settled by the device: completed or rejected (removed from the
 * device's queue) or abandoned (pending again, sent again). One never settled
 * stays queued and goes out again on the device's next connection.
 */
import type { Logger } from 'pino';
import type { C2dMessage } from './messages.ts';
import type { HubStore } from './store.ts';

/** How a device settles a cloud-to-device message. */
export type C2dOutcome = 'complete' | 'reject' | 'abandon';

export class C2dDelivery {
  private inflight: C2dMessage | undefined;
  private pumping = false;
  private subscribed = false;
  private closed = false;

  constructor(
    private readonly store: Pick<HubStore, 'completeC2d'>,
    /** The next message to hand out, its delivery counted (the hub's claim, which dead-letters on the way). */
    private readonly claim: () => Promise<C2dMessage | undefined>,
    private readonly deviceId: string,
    private readonly send: (message: C2dMessage) => void,
    private readonly logger: Logger,
    /** Told of each message settled for good (completed or rejected), for delivery feedback. */
    private readonly settled: (message: C2dMessage, outcome: C2dOutcome) => Promise<void>,
  ) {}

  /** The device subscribed (or its kept subscription resumed): pending messages start to flow. */
  subscribe(): Promise<void> {
    this.subscribed = true;
    return this.pump();
  }

  unsubscribe(): void {
    this.subscribed = false;
  }

  /** The connection is gone: nothing more is sent on it. */
  close(): void {
    this.closed = true;
  }

  /** Sends the oldest pending message unless one is in flight already. */
  async pump(): Promise<void> {
    if (this.pumping || this.inflight || this.closed || !this.subscribed) return;
    this.pumping = true;
    try {
      const message = await this.claim();
      if (!message || this.closed) return;
      this.inflight = message;
      this.send(message);
    } catch (err) {
      this.logger.error({ err, deviceId: this.deviceId }, 'cloud-to-device delivery failed');
    } finally {
      this.pumping = false;
    }
  }

  /** The device acknowledged the message in flight (an MQTT PUBACK): it is complete. */
  acknowledged(): Promise<void> {
    return this.settle('complete');
  }

  /** The device settled the message in flight; the next one (or this one again, when abandoned) may go. */
  async settle(outcome: C2dOutcome): Promise<void> {
    const message = this.inflight;
    if (!message) return;
    try {
      if (outcome !== 'abandon') {
        await this.store.completeC2d(this.deviceId, message.id);
        await this.settled(message, outcome);
      }
      if (this.inflight === message) this.inflight = undefined;
      await this.pump();
    } catch (err) {
      this.logger.error({ err, deviceId: this.deviceId }, 'cloud-to-device completion failed');
    }
  }
}
