/** The bus of a hub that runs alone: events go to this process's own handlers. */
import type { HubBus, HubEvent, HubEventHandler } from '../domain/bus.ts';

export class LocalBus implements HubBus {
  private readonly handlers: HubEventHandler[] = [];

  async publish(event: HubEvent): Promise<void> {
    // Delivered on a later turn, as Redis would, so no caller depends on synchronous delivery.
    setImmediate(() => {
      for (const handler of this.handlers) handler(event);
    });
  }

  subscribe(handler: HubEventHandler): void {
    this.handlers.push(handler);
  }

  async close(): Promise<void> {
    this.handlers.length = 0;
  }
}
