/** The bus of a hub that runs alone: events go to this process's own handlers. */
import type { HubBus, HubEvent, HubEventHandler } from '../domain/bus.ts';

export class LocalBus implements HubBus {
  private readonly handlers: HubEventHandler[] = [];
  private pending: HubEvent[] = [];

  async publish(event: HubEvent): Promise<void> {
    // Delivered on a later turn, as Redis would, so no caller depends on synchronous delivery;
    // in publishing order, everything published before that turn in one go.
    if (this.pending.push(event) === 1) setImmediate(() => this.deliver());
  }

  private deliver(): void {
    const events = this.pending;
    this.pending = [];
    for (const event of events) for (const handler of this.handlers) handler(event);
  }

  subscribe(handler: HubEventHandler): void {
    this.handlers.push(handler);
  }

  async close(): Promise<void> {
    this.handlers.length = 0;
  }
}
