/**
 * Rate-limit counters: in process (`policy: local`) or in Redis (`policy:
 * redis`, shared by every gateway process). Unlike Kong, which checks and
 * then increments asynchronously (Kong/kong#2629), the check and the
 * increment are one atomic step: in process because JavaScript runs it
 * without yielding, in Redis because it is one Lua script.
 */
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { RedisConfig } from './schema.ts';

export interface Counter {
  key: string;
  limit: number;
  /** When the window ends (ms since the epoch); the counter is dropped then. */
  expiresAt: number;
}

export interface CounterResult {
  /** False when one counter would pass its limit; nothing was counted then. */
  allowed: boolean;
  /** Each counter's value before this request. */
  usage: number[];
}

export interface CounterStore {
  checkAndIncrement(counters: Counter[]): CounterResult | Promise<CounterResult>;
}

/** Reads counters without counting (the admin API's rate-limit state). */
export interface CounterReader {
  /** Each counter's value now (0 for a window nothing was counted in). */
  usage(counters: Counter[]): number[] | Promise<number[]>;
}

class LocalCounters implements CounterStore, CounterReader {
  private readonly counts = new Map<string, { value: number; expiresAt: number }>();
  private nextSweep = 0;

  checkAndIncrement(counters: Counter[]): CounterResult {
    const now = Date.now();
    if (now >= this.nextSweep) this.sweep(now);
    const usage: number[] = [];
    let allowed = true;
    for (const counter of counters) {
      const entry = this.counts.get(counter.key);
      const used = entry && entry.expiresAt > now ? entry.value : 0;
      usage.push(used);
      if (used + 1 > counter.limit) allowed = false;
    }
    if (allowed) {
      for (let i = 0; i < counters.length; i++) {
        const { key, expiresAt } = counters[i]!;
        const entry = this.counts.get(key);
        if (entry && entry.expiresAt === expiresAt) entry.value = usage[i]! + 1;
        else this.counts.set(key, { value: usage[i]! + 1, expiresAt });
      }
    }
    return { allowed, usage };
  }

  usage(counters: Counter[]): number[] {
    const now = Date.now();
    return counters.map(({ key }) => {
      const entry = this.counts.get(key);
      return entry && entry.expiresAt > now ? entry.value : 0;
    });
  }

  /** Drops ended windows, at most once a second, so memory follows the active clients. */
  private sweep(now: number): void {
    for (const [key, entry] of this.counts) if (entry.expiresAt <= now) this.counts.delete(key);
    this.nextSweep = now + 1000;
  }
}

/**
 * KEYS: the counters; ARGV: their limits, then their window ends (ms).
 * Returns { allowed (1|0), usage before the request… }.
 */
const CHECK_AND_INCREMENT = `
local n = #KEYS
local result = { 1 }
for i = 1, n do
  local current = tonumber(redis.call('GET', KEYS[i]) or '0')
  result[i + 1] = current
  if current + 1 > tonumber(ARGV[i]) then result[1] = 0 end
end
if result[1] == 1 then
  for i = 1, n do
    redis.call('INCR', KEYS[i])
    redis.call('PEXPIREAT', KEYS[i], ARGV[n + i])
  end
end
return result
`;
const SCRIPT_SHA = createHash('sha1').update(CHECK_AND_INCREMENT).digest('hex');

/** How often a failing Redis is logged at most: once per interval, not once per request. */
const FAILURE_LOG_INTERVAL_MS = 10_000;

export class RedisCounters implements CounterStore, CounterReader {
  private readonly client: Redis;
  private lastFailureLog = 0;

  constructor(
    conf: RedisConfig,
    private readonly logger: Logger,
  ) {
    this.client = new Redis({
      host: conf.host ?? '127.0.0.1',
      port: conf.port,
      username: conf.username ?? undefined,
      password: conf.password ?? undefined,
      db: conf.database,
      connectTimeout: conf.timeout || undefined,
      commandTimeout: conf.timeout || undefined,
      // Fail fast while Redis is away, so fault_tolerant requests pass instead of queueing.
      maxRetriesPerRequest: 1,
      // Connect on the first counted request, not when a configuration merely mentions this Redis.
      lazyConnect: true,
      tls: conf.ssl ? { rejectUnauthorized: conf.ssl_verify, servername: conf.server_name ?? conf.host ?? undefined } : undefined,
    });
    // Connection errors surface through the commands; the event only needs a listener.
    this.client.on('error', () => undefined);
  }

  async checkAndIncrement(counters: Counter[]): Promise<CounterResult> {
    const args = [...counters.map((c) => c.key), ...counters.map((c) => String(c.limit)), ...counters.map((c) => String(c.expiresAt))];
    let reply: unknown;
    try {
      reply = await this.client.evalsha(SCRIPT_SHA, counters.length, ...args);
    } catch (err) {
      if (!/NOSCRIPT/.test((err as Error).message)) throw err;
      reply = await this.client.eval(CHECK_AND_INCREMENT, counters.length, ...args);
    }
    const [allowed, ...usage] = reply as number[];
    return { allowed: allowed === 1, usage };
  }

  async usage(counters: Counter[]): Promise<number[]> {
    if (counters.length === 0) return [];
    const values = await this.client.mget(counters.map((c) => c.key));
    return values.map((value) => Number(value ?? 0));
  }

  /** Logs a counter failure, at most once per interval. */
  noteFailure(err: unknown): void {
    const now = Date.now();
    if (now - this.lastFailureLog < FAILURE_LOG_INTERVAL_MS) return;
    this.lastFailureLog = now;
    this.logger.error({ err: (err as Error).message }, 'rate-limiting: failed to reach Redis; requests are let through while fault_tolerant is true');
  }

  close(): Promise<void> {
    return this.client.quit().then(
      () => undefined,
      () => this.client.disconnect(),
    );
  }
}

/** The stores of one gateway: one local table, one Redis connection per Redis server. */
export class CounterStores {
  private readonly redisStores = new Map<string, RedisCounters>();
  readonly local: CounterStore;
  /** The `policy: local` table when this process keeps it (not in a worker process, which asks the listening one). */
  private readonly table: LocalCounters | null;

  /** `listener`: in a worker process, the listening process's table. */
  constructor(
    private readonly logger: Logger,
    listener?: CounterStore,
  ) {
    this.table = listener ? null : new LocalCounters();
    this.local = listener ?? this.table!;
  }

  /** Where the counters of `policy` are read: this process's table, or Redis. */
  reader(policy: 'local' | 'redis', redis: RedisConfig): CounterReader {
    if (policy === 'redis') return this.redis(redis);
    if (!this.table) throw new Error('the local rate-limit counters are kept by the listening process');
    return this.table;
  }

  redis(conf: RedisConfig): RedisCounters {
    const id = JSON.stringify([conf.host, conf.port, conf.database, conf.username, conf.password, conf.ssl, conf.ssl_verify, conf.server_name, conf.timeout]);
    let store = this.redisStores.get(id);
    if (!store) {
      store = new RedisCounters(conf, this.logger);
      this.redisStores.set(id, store);
    }
    return store;
  }

  async close(): Promise<void> {
    await Promise.all([...this.redisStores.values()].map((s) => s.close()));
    this.redisStores.clear();
  }
}
