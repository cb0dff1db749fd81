/**
 * Cloud-to-device delivery to one device connection: one message in flight at
 * a time (sent at QoS 1), completed, that is removed from the device's queue,
 * by the device's acknowledgement. One never acknowledged stays queued and
 * goes out again on the device's next connection.
 */
import type { Logger } from 'pino';
import type { C2dMessage } from './messages.ts';
import type { HubStore } from './store.ts';

export class C2dDelivery {
  private inflight: string | undefined;
  private pumping = false;
  private subscribed = false;
  private closed = false;

  constructor(
    private readonly store: Pick<HubStore, 'nextC2d' | 'completeC2d'>,
    private readonly deviceId: string,
    private readonly send: (message: C2dMessage) => void,
    private readonly logger: Logger,
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
      const message = await this.store.nextC2d(this.deviceId);
      if (!message || this.closed) return;
      this.inflight = message.id;
      this.send(message);
    } catch (err) {
      this.logger.error({ err, deviceId: this.deviceId }, 'cloud-to-device delivery failed');
    } finally {
      this.pumping = false;
    }
  }

  /** The device acknowledged the message in flight: it is complete, and the next one may go. */
  async acknowledged(): Promise<void> {
    const id = this.inflight;
    if (!id) return;
    try {
      await this.store.completeC2d(this.deviceId, id);
      if (this.inflight === id) this.inflight = undefined;
      await this.pump();
    } catch (err) {
      this.logger.error({ err, deviceId: this.deviceId }, 'cloud-to-device completion failed');
    }
  }
}
