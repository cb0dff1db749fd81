/**
 * Scale-out state (DESIGN "Scale-out"): registry, twins, C2D queues and
 * presence in Redis, shared by every replica.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { MAX_PENDING_C2D, queueFull, type C2dMessage } from '../domain/messages.ts';
import { newPolicies, withMissingPolicies, type Policies } from '../domain/policies.ts';
import { alreadyExists, identityKey, notFound, parseIdentityKey, type IdentityRecord } from '../domain/registry.ts';
import type { HubStore, IdentityChange } from '../domain/store.ts';
import type { CaCertificates } from '../domain/x509.ts';
import { KeyedQueue } from './keyed-queue.ts';

/** Deletes a key (or hash field) only while it still holds the caller's value. */
const DELETE_IF_OWNER = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
const HDEL_IF_OWNER = `if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end return 0`;
const SET_IF_UNCHANGED = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) return 1 end return 0`;
const PUSH_IF_ROOM = `if redis.call('LLEN', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end redis.call('RPUSH', KEYS[1], ARGV[1]) return 1`;
const LOCK_MS = 5000;

export class RedisStore implements HubStore {
  private readonly local = new KeyedQueue();

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private k(...parts: string[]): string {
    return `${this.prefix}${parts.join(':')}`;
  }

  /** Read-modify-write of one identity across replicas: a short Redis lock, queued locally first. */
  private withLock<T>(key: string, task: () => Promise<T>): Promise<T> {
    return this.local.run(key, async () => {
      const lock = this.k('lock', key);
      const token = randomUUID();
      const deadline = Date.now() + LOCK_MS;
      while (!(await this.redis.set(lock, token, 'PX', LOCK_MS, 'NX'))) {
        if (Date.now() > deadline) throw new Error(`lock on ${key} not acquired`);
        await delay(2 + Math.random() * 5);
      }
      try {
        return await task();
      } finally {
        await this.redis.eval(DELETE_IF_OWNER, 1, lock, token);
      }
    });
  }

  async getIdentity(key: string): Promise<IdentityRecord | undefined> {
    const text = await this.redis.get(this.k('identity', key));
    return text === null ? undefined : (JSON.parse(text) as IdentityRecord);
  }

  async listIdentities(modulesOf?: string): Promise<IdentityRecord[]> {
    const keys = (await this.redis.smembers(this.k('identities'))).filter((key) =>
      modulesOf === undefined ? !key.includes('/') : key.startsWith(`${modulesOf}/`),
    );
    if (!keys.length) return [];
    const texts = await this.redis.mget(keys.map((key) => this.k('identity', key)));
    return texts
      .filter((t): t is string => t !== null)
      .map((t) => JSON.parse(t) as IdentityRecord)
      .sort((a, b) => identityKey(a).localeCompare(identityKey(b)));
  }

  async createIdentity(record: IdentityRecord): Promise<IdentityRecord> {
    const key = identityKey(record);
    if (!(await this.redis.set(this.k('identity', key), JSON.stringify(record), 'NX'))) throw alreadyExists(record);
    await this.redis.sadd(this.k('identities'), key);
    return record;
  }

  updateIdentity(key: string, change: IdentityChange): Promise<IdentityRecord> {
    return this.withLock(key, async () => {
      const current = await this.getIdentity(key);
      if (!current) throw notFound(parseIdentityKey(key) ?? { deviceId: key });
      const next = change(current);
      await this.redis.set(this.k('identity', key), JSON.stringify(next));
      return next;
    });
  }

  async deleteIdentity(key: string): Promise<boolean> {
    const modules = key.includes('/') ? [] : await this.listIdentities(key);
    for (const module of modules) await this.deleteIdentity(identityKey(module));
    const removed = await this.redis.del(this.k('identity', key));
    await this.redis.srem(this.k('identities'), key);
    if (!key.includes('/')) await this.redis.del(this.k('c2d', key));
    await this.redis.srem(this.k('c2dsub'), key);
    return removed > 0;
  }

  async policies(): Promise<Policies> {
    const key = this.k('policies');
    await this.redis.set(key, JSON.stringify(newPolicies()), 'NX');
    const text = (await this.redis.get(key))!;
    const { policies, added } = withMissingPolicies(JSON.parse(text) as Policies);
    // Replicas adding a new built-in policy at once: one write lands, the others read it back.
    if (added && (await this.redis.eval(SET_IF_UNCHANGED, 1, key, text, JSON.stringify(policies))) !== 1) return this.policies();
    return policies;
  }

  async caCertificates(): Promise<CaCertificates> {
    const text = await this.redis.get(this.k('certificates'));
    return text === null ? {} : (JSON.parse(text) as CaCertificates);
  }

  updateCaCertificates(change: (current: CaCertificates) => CaCertificates): Promise<CaCertificates> {
    return this.withLock('\0certificates', async () => {
      const next = change(await this.caCertificates());
      await this.redis.set(this.k('certificates'), JSON.stringify(next));
      return next;
    });
  }

  /** Drops expired messages; returns the live ones with their stored text. */
  private async liveQueue(deviceId: string, now: number): Promise<{ raw: string; message: C2dMessage }[]> {
    const list = this.k('c2d', deviceId);
    const live = [];
    for (const raw of await this.redis.lrange(list, 0, -1)) {
      const message = JSON.parse(raw) as C2dMessage;
      if (message.expiresAt > now) live.push({ raw, message });
      else await this.redis.lrem(list, 1, raw);
    }
    return live;
  }

  async enqueueC2d(deviceId: string, message: C2dMessage): Promise<void> {
    await this.liveQueue(deviceId, Date.now());
    const pushed = await this.redis.eval(PUSH_IF_ROOM, 1, this.k('c2d', deviceId), JSON.stringify(message), String(MAX_PENDING_C2D));
    if (pushed !== 1) throw queueFull(deviceId);
  }

  async nextC2d(deviceId: string, now = Date.now()): Promise<C2dMessage | undefined> {
    return (await this.liveQueue(deviceId, now))[0]?.message;
  }

  async completeC2d(deviceId: string, id: string): Promise<void> {
    const entry = (await this.liveQueue(deviceId, Date.now())).find((e) => e.message.id === id);
    if (entry) await this.redis.lrem(this.k('c2d', deviceId), 1, entry.raw);
  }

  async pendingC2d(deviceId: string): Promise<number> {
    return (await this.liveQueue(deviceId, Date.now())).length;
  }

  async setPersistentC2dSubscription(deviceId: string, kept: boolean): Promise<void> {
    if (kept) await this.redis.sadd(this.k('c2dsub'), deviceId);
    else await this.redis.srem(this.k('c2dsub'), deviceId);
  }

  async hasPersistentC2dSubscription(deviceId: string): Promise<boolean> {
    return (await this.redis.sismember(this.k('c2dsub'), deviceId)) === 1;
  }

  async setOnline(key: string, connectionId: string): Promise<void> {
    await this.redis.hset(this.k('online'), key, connectionId);
  }

  async setOffline(key: string, connectionId: string): Promise<void> {
    await this.redis.eval(HDEL_IF_OWNER, 1, this.k('online'), key, connectionId);
  }

  async isOnline(key: string): Promise<boolean> {
    return (await this.redis.hexists(this.k('online'), key)) === 1;
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
