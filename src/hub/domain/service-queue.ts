/**
 * What the hub keeps for the service side to receive: delivery feedback of
 * cloud-to-device messages (and, with file upload, its notifications). A
 * bounded queue in this replica, taken by the receivers attached to it: a
 * record is gone once a receiver accepted it, and back in front when one
 * gave it back.
 */

/** One entry of the feedback batch the service SDK's feedback receiver reads. */
export interface FeedbackRecord {
  originalMessageId: string;
  deviceGenerationId: string;
  deviceId: string;
  enqueuedTimeUtc: string;
  statusCode: 'Success' | 'Rejected' | 'Expired' | 'DeliveryCountExceeded' | 'Purged';
  description: string;
}

/** A feedback record as the hub keeps it until the service has taken it (the id names it in the store). */
export interface KeptFeedback {
  id: string;
  record: FeedbackRecord;
}

export class ServiceQueue<T> {
  private readonly items: T[] = [];
  private readonly listeners = new Set<() => void>();

  constructor(private readonly capacity: number) {}

  add(item: T): void {
    this.items.push(item);
    if (this.items.length > this.capacity) this.items.shift();
    for (const listener of this.listeners) listener();
  }

  /** The oldest item, taken out; `giveBack` returns one that was not accepted. */
  take(): T | undefined {
    return this.items.shift();
  }

  giveBack(item: T): void {
    this.items.unshift(item);
  }

  get size(): number {
    return this.items.length;
  }

  /** Called whenever an item arrives; returns the unsubscribe. */
  follow(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
