/**
 * The replicas' event bus on Redis pub/sub, so a device on replica A gets a
 * C2D message or desired update sent through replica B.
 */
import type { Redis } from 'ioredis';
import type { HubBus, HubEvent, HubEventHandler } from '../domain/bus.ts';

export class RedisBus implements HubBus {
  private readonly handlers: HubEventHandler[] = [];

  constructor(
    private readonly publisher: Redis,
    private readonly subscriber: Redis,
    private readonly channel: string,
  ) {
    subscriber.on('message', (channel: string, text: string) => {
      if (channel !== this.channel) return;
      const event = JSON.parse(text) as HubEvent;
      for (const handler of this.handlers) handler(event);
    });
  }

  async publish(event: HubEvent): Promise<void> {
    await this.publisher.publish(this.channel, JSON.stringify(event));
  }

  subscribe(handler: HubEventHandler): void {
    this.handlers.push(handler);
  }

  async close(): Promise<void> {
    this.handlers.length = 0;
    this.subscriber.disconnect();
    this.publisher.disconnect();
  }
}
