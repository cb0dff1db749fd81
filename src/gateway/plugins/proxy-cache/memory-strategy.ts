/**
 * proxy-cache's `memory` strategy: Kong keeps cached answers in an nginx
 * shared dictionary (`kong_db_cache` by default, 128 MiB), each entry with
 * its storage TTL, the least recently used dropped when it is full. Here a
 * dictionary is a Map per name in this process, kept across configuration
 * reloads as Kong's shared memory is.
 */

/** One cached answer, as Kong stores it. */
export interface CachedAnswer {
  status: number;
  /** The answer's headers, without the per-request ones. */
  headers: Record<string, string | string[]>;
  body: Buffer;
  /** When it was stored, whole seconds since the epoch (Kong's `ngx.time()`). */
  timestamp: number;
  /** Its freshness lifetime, seconds: cache_ttl, or from Cache-Control with `cache_control`. */
  ttl: number;
}

interface Slot {
  answer: CachedAnswer;
  /** ms since the epoch after which the dictionary no longer has it (its storage TTL). */
  expiresAt: number;
  size: number;
}

/** Kong's mem_cache_size default, the size of kong_db_cache. */
const DICTIONARY_BYTES = 128 * 1024 * 1024;

function sizeOf(answer: CachedAnswer): number {
  let size = answer.body.length + 64;
  for (const name in answer.headers) size += name.length + String(answer.headers[name]).length;
  return size;
}

export class MemoryDictionary {
  /** In order of use, least recent first. */
  private readonly slots = new Map<string, Slot>();
  private bytes = 0;

  constructor(private readonly capacity = DICTIONARY_BYTES) {}

  fetch(key: string, now: number): CachedAnswer | undefined {
    const slot = this.slots.get(key);
    if (!slot) return undefined;
    this.slots.delete(key);
    if (now >= slot.expiresAt) {
      this.bytes -= slot.size;
      return undefined;
    }
    this.slots.set(key, slot);
    return slot.answer;
  }

  /** Stores `answer` for `ttl` seconds from `now` (ms), making room by dropping the least recently used. */
  store(key: string, answer: CachedAnswer, ttl: number, now: number): void {
    this.purge(key);
    const size = sizeOf(answer);
    if (size > this.capacity) return;
    for (const [oldest, slot] of this.slots) {
      if (this.bytes + size <= this.capacity) break;
      this.slots.delete(oldest);
      this.bytes -= slot.size;
    }
    this.slots.set(key, { answer, expiresAt: now + ttl * 1000, size });
    this.bytes += size;
  }

  private purge(key: string): void {
    const slot = this.slots.get(key);
    if (!slot) return;
    this.slots.delete(key);
    this.bytes -= slot.size;
  }
}

/** The dictionaries of one gateway process, by `memory.dictionary_name`. */
export class MemoryDictionaries {
  private readonly byName = new Map<string, MemoryDictionary>();

  get(name: string): MemoryDictionary {
    let found = this.byName.get(name);
    if (!found) this.byName.set(name, (found = new MemoryDictionary()));
    return found;
  }
}
