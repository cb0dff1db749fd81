/** The store and bus for the hub's options: files and an in-process bus, or Redis for both. */
import { Redis } from 'ioredis';
import { StartupError } from '../../common/errors.ts';
import type { HubBus } from '../domain/bus.ts';
import type { HubStore } from '../domain/store.ts';
import { FileStore } from './file-store.ts';
import { LocalBus } from './local-bus.ts';
import { RedisBus } from './redis-bus.ts';
import { RedisStore } from './redis-store.ts';

export interface StateOptions {
  redisUrl: string;
  hostName: string;
  dataDir: string;
}

/** Connects (failing start-up with a clear message when Redis is not there) and subscribes. */
async function openRedis(url: string, hostName: string): Promise<{ store: RedisStore; bus: RedisBus }> {
  const connect = async () => {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 3 });
    try {
      await client.connect();
    } catch (err) {
      client.disconnect();
      throw new StartupError(`hub: cannot reach Redis at ${url} (--redis-url): ${(err as Error).message}`);
    }
    return client;
  };
  const prefix = `offcloud:hub:${hostName.toLowerCase()}:`;
  const [data, publisher, subscriber] = [await connect(), await connect(), await connect()];
  await subscriber.subscribe(`${prefix}events`);
  return { store: new RedisStore(data, prefix), bus: new RedisBus(publisher, subscriber, `${prefix}events`) };
}

/** `atStart`: the hub server opening the files, which first removes what a crash left (never a command). */
export async function openState(options: StateOptions, atStart = false): Promise<{ store: HubStore; bus: HubBus }> {
  if (options.redisUrl) return openRedis(options.redisUrl, options.hostName);
  const store = new FileStore(options.dataDir);
  if (atStart) await store.removeStaleTemporaries();
  return { store, bus: new LocalBus() };
}
