/**
 * Scale-out state (DESIGN "Scale-out"): registry, twins, C2D queues and
 * presence in Redis, shared by every replica.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { claimC2d, expireC2d, liveC2d, MAX_PENDING_C2D, queueFull, type C2dMessage, type DeadC2d } from '../domain/messages.ts';
import { newPolicies, withMissingPolicies, type Policies } from '../domain/policies.ts';
import { alreadyExists, identityKey, notFound, parseIdentityKey, type IdentityRecord } from '../domain/registry.ts';
import { MAX_KEPT_FEEDBACK, type HubStore, type IdentityChange } from '../domain/store.ts';
import type { KeptFeedback } from '../domain/service-queue.ts';
import type { CaCertificates } from '../domain/x509.ts';
import { KeyedSerialQueue } from '../../common/serial-queue.ts';

/** Deletes a key (or hash field) only while it still holds the caller's value. */
const DELETE_IF_OWNER = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
const HDEL_IF_OWNER = `if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end return 0`;
const SET_IF_UNCHANGED = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) return 1 end return 0`;
const LOCK_MS = 5000;

export class RedisStore implements HubStore {
  private readonly local = new KeyedSerialQueue();

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

  /** A device's queue as stored, expired messages included (only enqueue and claim take them out, as dead letters). */
  private async c2dQueue(deviceId: string): Promise<C2dMessage[]> {
    return (await this.redis.lrange(this.k('c2d', deviceId), 0, -1)).map((raw) => JSON.parse(raw) as C2dMessage);
  }

  /** Read-modify-write of a device's queue across replicas, under its lock; `change` may throw to leave it. */
  private changeC2d<T>(deviceId: string, change: (messages: C2dMessage[]) => { messages: C2dMessage[]; result: T }): Promise<T> {
    return this.withLock(`c2d:${deviceId}`, async () => {
      const { messages, result } = change(await this.c2dQueue(deviceId));
      const list = this.k('c2d', deviceId);
      const write = this.redis.multi().del(list);
      if (messages.length) write.rpush(list, ...messages.map((m) => JSON.stringify(m)));
      await write.exec();
      return result;
    });
  }

  enqueueC2d(deviceId: string, message: C2dMessage, now: number): Promise<DeadC2d[]> {
    return this.changeC2d(deviceId, (queue) => {
      const { messages, dead } = expireC2d(queue, now);
      if (messages.length >= MAX_PENDING_C2D) throw queueFull(deviceId);
      return { messages: [...messages, message], result: dead };
    });
  }

  async nextC2d(deviceId: string, now = Date.now()): Promise<C2dMessage | undefined> {
    return liveC2d(await this.c2dQueue(deviceId), now)[0];
  }

  claimC2d(deviceId: string, now: number, maxDeliveries: number): Promise<{ message: C2dMessage | undefined; dead: DeadC2d[] }> {
    return this.changeC2d(deviceId, (queue) => {
      const { messages, message, dead } = claimC2d(queue, now, maxDeliveries);
      return { messages, result: { message, dead } };
    });
  }

  completeC2d(deviceId: string, id: string): Promise<void> {
    return this.changeC2d(deviceId, (queue) => ({ messages: queue.filter((m) => m.id !== id), result: undefined }));
  }

  async pendingC2d(deviceId: string, now = Date.now()): Promise<number> {
    return liveC2d(await this.c2dQueue(deviceId), now).length;
  }

  async setPersistentC2dSubscription(deviceId: string, kept: boolean): Promise<void> {
    if (kept) await this.redis.sadd(this.k('c2dsub'), deviceId);
    else await this.redis.srem(this.k('c2dsub'), deviceId);
  }

  async hasPersistentC2dSubscription(deviceId: string): Promise<boolean> {
    return (await this.redis.sismember(this.k('c2dsub'), deviceId)) === 1;
  }

  /** A hash by id; each record's enqueue time orders them. */
  async keepFeedback(kept: KeptFeedback): Promise<void> {
    await this.redis.hset(this.k('feedback'), kept.id, JSON.stringify(kept));
    if ((await this.redis.hlen(this.k('feedback'))) > MAX_KEPT_FEEDBACK) {
      const oldest = (await this.keptFeedback()).slice(0, -MAX_KEPT_FEEDBACK);
      if (oldest.length) await this.redis.hdel(this.k('feedback'), ...oldest.map((k) => k.id));
    }
  }

  async keptFeedback(): Promise<KeptFeedback[]> {
    const all = Object.values(await this.redis.hgetall(this.k('feedback'))).map((text) => JSON.parse(text) as KeptFeedback);
    return all.sort((a, b) => a.record.enqueuedTimeUtc.localeCompare(b.record.enqueuedTimeUtc));
  }

  async dropFeedback(id: string): Promise<void> {
    await this.redis.hdel(this.k('feedback'), id);
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
