/**
 * The data service's side of discovery: the registry watch keeps the DevSvc
 * node list, calls go round-robin over live nodes, and a node whose call
 * fails is skipped for a while and the call is tried on the next one.
 */
import { Metadata, status } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { devSvcClient, type DevSvcClient } from './proto.ts';
import type { NodeWatch, ServiceNode } from './discovery/types.ts';
import type { Device } from './store.ts';

/** How long a node whose call failed is left out of the rotation. */
export const FAILED_NODE_PAUSE_MS = 5000;
/** Most nodes one lookup tries before it reports failure. */
const MAX_ATTEMPTS = 3;

export class LookupFailedError extends Error {}

export interface LookupResult {
  device: Device;
  node: ServiceNode;
}

export class DevSvcPool {
  private readonly clients = new Map<string, DevSvcClient>();
  private readonly pausedUntil = new Map<string, number>();
  private next = 0;

  constructor(
    private readonly watch: NodeWatch,
    private readonly deadlineMs: number,
    private readonly logger: Logger,
  ) {}

  /** Nodes to try, in round-robin order, live ones first. */
  private candidates(): ServiceNode[] {
    const nodes = this.watch.nodes();
    this.dropClientsOfGoneNodes(nodes);
    if (!nodes.length) return [];
    const start = this.next++ % nodes.length;
    const ordered = [...nodes.slice(start), ...nodes.slice(0, start)];
    const now = Date.now();
    const live = ordered.filter((n) => (this.pausedUntil.get(n.id) ?? 0) <= now);
    // When every node failed lately, try them anyway rather than answer without asking.
    return (live.length ? live : ordered).slice(0, MAX_ATTEMPTS);
  }

  private dropClientsOfGoneNodes(nodes: ServiceNode[]): void {
    const addresses = new Set(nodes.map((n) => n.address));
    for (const [address, client] of this.clients) {
      if (!addresses.has(address)) {
        client.close();
        this.clients.delete(address);
      }
    }
    const ids = new Set(nodes.map((n) => n.id));
    for (const id of this.pausedUntil.keys()) if (!ids.has(id)) this.pausedUntil.delete(id);
  }

  private client(address: string): DevSvcClient {
    let client = this.clients.get(address);
    if (!client) {
      client = devSvcClient(address);
      this.clients.set(address, client);
    }
    return client;
  }

  private callGet(node: ServiceNode, name: string): Promise<Device> {
    return new Promise((resolve, reject) => {
      this.client(node.address).Get({ name }, new Metadata(), { deadline: Date.now() + this.deadlineMs }, (err, device) =>
        err || !device ? reject(err ?? new Error('empty answer')) : resolve(device),
      );
    });
  }

  /** DevSvc.Get on the next live node, trying others when one fails. */
  async get(name: string): Promise<LookupResult> {
    const nodes = this.candidates();
    if (!nodes.length) throw new LookupFailedError('no DevSvc node is registered');
    let last: unknown;
    for (const node of nodes) {
      try {
        return { device: await this.callGet(node, name), node };
      } catch (err) {
        last = err;
        this.pausedUntil.set(node.id, Date.now() + FAILED_NODE_PAUSE_MS);
        const code = (err as { code?: number }).code;
        this.logger.warn(
          { node: node.id, address: node.address, code: code === undefined ? undefined : status[code] },
          'DevSvc call failed; trying the next node',
        );
      }
    }
    throw new LookupFailedError(`every DevSvc node tried failed: ${(last as Error).message}`);
  }

  close(): void {
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }
}
