/**
 * Multicast DNS registry for one machine or one LAN, in go-micro's layout:
 * domain `micro.`, each node an instance `<node-id>.<service>.micro.` with
 * PTR, SRV, A/AAAA and a TXT of hex(zlib(JSON{Service, Version, Endpoints,
 * Metadata})) cut into 255-character strings. Nodes announce themselves on
 * every heartbeat with the registration TTL and say goodbye (TTL 0) on
 * shutdown; watchers forget a node whose TTL runs out unrefreshed.
 */
import makeMdns from 'multicast-dns';
import { isIPv6 } from 'node:net';
import { deflateSync, inflateSync } from 'node:zlib';
import type { Answer, Question } from 'dns-packet';
import { NodeCache, type Registry, type ServiceNode, type ServiceRecord } from './types.ts';

export const MDNS_DOMAIN = 'micro';
/** go-micro's ListServices asks this name for one PTR per service. */
const SERVICES_NAME = `_services.${MDNS_DOMAIN}`;

interface MdnsTxt {
  Service: string;
  Version: string;
  Endpoints: ServiceRecord['endpoints'];
  Metadata: Record<string, string>;
}

export function encodeTxt(txt: MdnsTxt): string[] {
  const hex = deflateSync(JSON.stringify(txt)).toString('hex');
  const parts: string[] = [];
  for (let i = 0; i < hex.length; i += 255) parts.push(hex.slice(i, i + 255));
  return parts;
}

export function decodeTxt(parts: Array<string | Buffer>): MdnsTxt | undefined {
  try {
    const hex = parts.map((p) => p.toString()).join('');
    const txt = JSON.parse(inflateSync(Buffer.from(hex, 'hex')).toString()) as Partial<MdnsTxt>;
    return typeof txt.Service === 'string'
      ? { Service: txt.Service, Version: String(txt.Version ?? ''), Endpoints: txt.Endpoints ?? [], Metadata: txt.Metadata ?? {} }
      : undefined;
  } catch {
    return undefined;
  }
}

function splitAddress(address: string): { host: string; port: number } {
  const cut = address.lastIndexOf(':');
  return { host: address.slice(0, cut).replace(/^\[|\]$/g, ''), port: Number(address.slice(cut + 1)) };
}

function nodeRecords(service: ServiceRecord, node: ServiceNode, ttl: number): Answer[] {
  const serviceName = `${service.name}.${MDNS_DOMAIN}`;
  const instance = `${node.id}.${serviceName}`;
  const { host, port } = splitAddress(node.address);
  const txt = encodeTxt({ Service: service.name, Version: service.version, Endpoints: service.endpoints, Metadata: node.metadata });
  return [
    { name: serviceName, type: 'PTR', ttl, data: instance },
    // The SRV target is the instance itself, so its A record sits under a name no other node shares.
    { name: instance, type: 'SRV', ttl, data: { port, target: instance, priority: 10, weight: 1 } },
    { name: instance, type: 'TXT', ttl, data: txt },
    isIPv6(host) ? { name: instance, type: 'AAAA', ttl, data: host } : { name: instance, type: 'A', ttl, data: host },
  ];
}

export interface MdnsRegistryOptions {
  /** How often a watcher asks again, so nodes that missed an announcement are found. */
  queryIntervalMs?: number;
  /** How long a new watch waits for the first answers before serving. */
  initialWaitMs?: number;
  /** IPv4 address of the one interface to use; every interface when absent. */
  interfaceAddress?: string;
}

export async function openMdnsRegistry(options: MdnsRegistryOptions = {}): Promise<Registry> {
  const queryIntervalMs = options.queryIntervalMs ?? 5000;
  const initialWaitMs = options.initialWaitMs ?? 500;
  const mdns = makeMdns({ loopback: true, reuseAddr: true, ...(options.interfaceAddress ? { interface: options.interfaceAddress } : {}) });
  await new Promise<void>((resolve, reject) => {
    mdns.once('ready', resolve);
    mdns.once('error', reject);
  });
  // A send that fails later (interface gone) must not crash the process; watchers keep their cache.
  mdns.on('error', () => undefined);
  const local = new Map<string, { service: ServiceRecord; node: ServiceNode; ttl: number }>();

  // dns-packet names type 255 'ANY', which its typings leave out.
  const asks = (question: Question, type: string) => question.type === type || (question.type as string) === 'ANY';
  mdns.on('query', (query) => {
    const answers: Answer[] = [];
    for (const question of query.questions) {
      for (const { service, node, ttl } of local.values()) {
        const records = nodeRecords(service, node, ttl);
        if (question.name === SERVICES_NAME && asks(question, 'PTR')) {
          answers.push({ name: SERVICES_NAME, type: 'PTR', ttl, data: `${service.name}.${SERVICES_NAME}` });
          continue;
        }
        answers.push(...records.filter((r) => r.name === question.name && asks(question, r.type)));
        // Asked for the service: the node's SRV, TXT and address come along so one round trip suffices.
        if (question.name === records[0]!.name && asks(question, 'PTR')) answers.push(...records.slice(1));
      }
    }
    if (answers.length) mdns.respond({ answers });
  });

  const announce = (answers: Answer[]) => new Promise<void>((resolve, reject) => mdns.respond({ answers }, (err) => (err ? reject(err) : resolve())));

  return {
    kind: 'mdns',
    where: `multicast DNS (domain ${MDNS_DOMAIN}.)`,
    async register(service, ttlSeconds) {
      for (const node of service.nodes) {
        local.set(node.id, { service, node, ttl: ttlSeconds });
        await announce(nodeRecords(service, node, ttlSeconds));
      }
    },
    async deregister(service) {
      for (const node of service.nodes) {
        local.delete(node.id);
        // TTL 0 is mDNS's goodbye: listeners drop the records at once.
        await announce(nodeRecords(service, node, 0)).catch(() => undefined);
      }
    },
    async watch(serviceName, onChange) {
      const cache = new NodeCache(onChange);
      const suffix = `.${serviceName}.${MDNS_DOMAIN}`;
      let firstNode: () => void = () => undefined;
      const found = new Promise<void>((resolve) => (firstNode = resolve));
      const onResponse = (response: { answers: Answer[]; additionals: Answer[] }) => {
        const records = [...response.answers, ...response.additionals];
        for (const srv of records) {
          if (srv.type !== 'SRV' || !srv.name.endsWith(suffix)) continue;
          const id = srv.name.slice(0, -suffix.length);
          if (srv.ttl === 0) {
            cache.delete(id);
            continue;
          }
          const address = records.find((r) => (r.type === 'A' || r.type === 'AAAA') && r.name === srv.data.target);
          const txt = records.find((r) => r.type === 'TXT' && r.name === srv.name);
          if (!address || (address.type !== 'A' && address.type !== 'AAAA')) continue;
          const decoded = txt?.type === 'TXT' ? decodeTxt(Array.isArray(txt.data) ? txt.data : [txt.data]) : undefined;
          const host = address.type === 'AAAA' ? `[${address.data}]` : address.data;
          cache.put({ id, address: `${host}:${srv.data.port}`, metadata: decoded?.Metadata ?? {} }, (srv.ttl ?? 120) * 1000);
          firstNode();
        }
      };
      mdns.on('response', onResponse);
      const ask = () => mdns.query({ questions: [{ name: `${serviceName}.${MDNS_DOMAIN}`, type: 'PTR' }] });
      ask();
      const timer = setInterval(ask, queryIntervalMs);
      timer.unref();
      const ready = Promise.race([found, new Promise<void>((resolve) => setTimeout(resolve, initialWaitMs).unref())]);
      return {
        nodes: () => cache.nodes(),
        ready,
        stop: async () => {
          clearInterval(timer);
          mdns.off('response', onResponse);
        },
      };
    },
    async close() {
      await new Promise<void>((resolve) => mdns.destroy(() => resolve()));
    },
  };
}
