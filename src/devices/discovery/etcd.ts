/**
 * The key-value registry (the spec's default) in go-micro's etcd layout: one
 * key per node, `/micro/registry/<service>/<node-id>`, holding the service
 * record with just that node, attached to a lease of the node's TTL. The
 * heartbeat keeps the lease alive; when a replica dies its lease runs out,
 * etcd deletes the key and every watcher sees the node go.
 */
import { Etcd3, type Lease } from 'etcd3';
import { registryUnreachable } from '../errors.ts';
import { NodeCache, parseServiceRecord, type NodeWatch, type Registry, type ServiceNode, type ServiceRecord } from './types.ts';

export const ETCD_PREFIX = '/micro/registry/';

/** go-micro replaces '/' in service names so a name is one key segment. */
function servicePath(name: string): string {
  return `${ETCD_PREFIX}${name.replace(/\//g, '-')}`;
}

export function nodeKey(service: string, nodeId: string): string {
  return `${servicePath(service)}/${nodeId.replace(/\//g, '-')}`;
}

const CALL_TIMEOUT_MS = 5000;

export async function connectEtcdRegistry(addresses: string[]): Promise<Registry> {
  const hosts = addresses.map((a) => (a.includes('://') ? a : `http://${a}`));
  const client = new Etcd3({
    hosts,
    dialTimeout: 2000,
    // Unary calls get a deadline so a dead etcd turns into an error, not a hang; watches stay open.
    defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + CALL_TIMEOUT_MS }),
  });
  try {
    await client.maintenance.status();
  } catch (err) {
    client.close();
    throw registryUnreachable('etcd', addresses.join(','), (err as Error).message.split('\n')[0] ?? 'no answer');
  }
  const leases = new Map<string, Lease>();

  const putWithNewLease = async (key: string, value: string, ttlSeconds: number) => {
    const lease = client.lease(ttlSeconds, { autoKeepAlive: false });
    lease.on('lost', () => {
      if (leases.get(key) === lease) leases.delete(key);
    });
    await lease.put(key).value(value);
    leases.set(key, lease);
  };

  return {
    kind: 'etcd',
    where: `etcd at ${addresses.join(',')}`,
    async register(service: ServiceRecord, ttlSeconds: number) {
      for (const node of service.nodes) {
        const key = nodeKey(service.name, node.id);
        const value = JSON.stringify({ ...service, nodes: [node] });
        const lease = leases.get(key);
        if (!lease) {
          await putWithNewLease(key, value, ttlSeconds);
          continue;
        }
        try {
          // Like go-micro: an unchanged node only renews its lease.
          await lease.keepaliveOnce();
        } catch {
          // The lease expired (etcd was away longer than the TTL): register afresh.
          leases.delete(key);
          await putWithNewLease(key, value, ttlSeconds);
        }
      }
    },
    async deregister(service: ServiceRecord) {
      for (const node of service.nodes) {
        const key = nodeKey(service.name, node.id);
        const lease = leases.get(key);
        leases.delete(key);
        await client.delete().key(key);
        if (lease) await lease.revoke().catch(() => undefined);
      }
    },
    async watch(serviceName: string, onChange?: (nodes: ServiceNode[]) => void): Promise<NodeWatch> {
      const prefix = `${servicePath(serviceName)}/`;
      const cache = new NodeCache(onChange);
      const nodeIdOf = (key: string) => key.slice(prefix.length);
      const listing = await client.getAll().prefix(prefix).exec();
      for (const kv of listing.kvs) {
        for (const node of parseServiceRecord(kv.value.toString())?.nodes ?? []) cache.put(node);
      }
      // Start the watch right after the listing's revision so no change falls between them.
      const watcher = await client
        .watch()
        .prefix(prefix)
        .startRevision(String(BigInt(listing.header.revision) + 1n))
        .create();
      watcher.on('put', (kv) => {
        const node = parseServiceRecord(kv.value.toString())?.nodes[0];
        if (node) cache.put(node);
      });
      watcher.on('delete', (kv) => cache.delete(nodeIdOf(kv.key.toString())));
      // Errors are retried by the client; the cache keeps the last known nodes meanwhile.
      watcher.on('error', () => undefined);
      return { nodes: () => cache.nodes(), ready: Promise.resolve(), stop: () => watcher.cancel() };
    },
    async close() {
      for (const lease of leases.values()) lease.release();
      leases.clear();
      client.close();
    },
  };
}
