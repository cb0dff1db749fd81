/**
 * go-micro's registration model (registry.Service / registry.Node): a service
 * name with one node per running replica. Every backend stores this shape in
 * its own layout so a go-micro client reading the same registry would find us.
 */

export interface ServiceNode {
  /** `<service>-<uuid>`, as go-micro names nodes. */
  id: string;
  /** `host:port` the node's gRPC server answers on. */
  address: string;
  metadata: Record<string, string>;
}

export interface ServiceEndpoint {
  name: string;
  request: { name: string; type: string };
  response: { name: string; type: string };
  metadata: Record<string, string>;
}

/** One service as go-micro encodes it; `nodes` holds just the registering node. */
export interface ServiceRecord {
  name: string;
  version: string;
  metadata: Record<string, string>;
  endpoints: ServiceEndpoint[];
  nodes: ServiceNode[];
}

export const REGISTRY_KINDS = ['etcd', 'mdns', 'kubernetes', 'static'] as const;
export type RegistryKind = (typeof REGISTRY_KINDS)[number];

/** A live view of one service's nodes, kept current by the registry. */
export interface NodeWatch {
  nodes(): ServiceNode[];
  /** Resolves once the first lookup answered (or its wait ran out). */
  ready: Promise<void>;
  stop(): Promise<void>;
}

export interface Registry {
  readonly kind: RegistryKind;
  /** For people: where this registry lives (`etcd at 127.0.0.1:2379`). */
  readonly where: string;
  /** Registers or refreshes a node for `ttlSeconds`; the heartbeat calls it again. */
  register(service: ServiceRecord, ttlSeconds: number): Promise<void>;
  deregister(service: ServiceRecord): Promise<void>;
  /** Watches a service's nodes and keeps them cached. */
  watch(serviceName: string, onChange?: (nodes: ServiceNode[]) => void): Promise<NodeWatch>;
  close(): Promise<void>;
}

/** go-micro's node record for one replica of a gRPC server. */
export function serviceRecord(name: string, nodeId: string, address: string, registry: RegistryKind): ServiceRecord {
  return {
    name,
    version: 'latest',
    metadata: {},
    endpoints: [
      {
        name: 'DevSvc.Get',
        request: { name: 'DeviceName', type: 'DeviceName' },
        response: { name: 'Device', type: 'Device' },
        metadata: {},
      },
    ],
    nodes: [{ id: nodeId, address, metadata: { protocol: 'grpc', server: 'grpc', transport: 'grpc', registry } }],
  };
}

/** Parses a stored service record, keeping only well-formed nodes. */
export function parseServiceRecord(text: string): ServiceRecord | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const record = parsed as Partial<ServiceRecord> | null;
  if (!record || typeof record.name !== 'string' || !Array.isArray(record.nodes)) return undefined;
  const nodes = record.nodes.filter((n): n is ServiceNode => typeof n?.id === 'string' && typeof n.address === 'string' && /:\d+$/.test(n.address));
  return {
    name: record.name,
    version: String(record.version ?? ''),
    metadata: record.metadata ?? {},
    endpoints: record.endpoints ?? [],
    nodes: nodes.map((n) => ({ ...n, metadata: n.metadata ?? {} })),
  };
}

/** The node list a watch keeps: nodes by id, each with an optional expiry (mdns TTLs). */
export class NodeCache {
  private readonly entries = new Map<string, { node: ServiceNode; expiresAt: number }>();

  constructor(private readonly onChange?: (nodes: ServiceNode[]) => void) {}

  nodes(): ServiceNode[] {
    const now = Date.now();
    let expired = false;
    for (const [id, entry] of this.entries) {
      if (entry.expiresAt <= now) {
        this.entries.delete(id);
        expired = true;
      }
    }
    if (expired) this.onChange?.(this.list());
    return this.list();
  }

  /** Puts or refreshes a node; `ttlMs` of Infinity for registries that delete entries themselves. */
  put(node: ServiceNode, ttlMs = Infinity): void {
    const known = this.entries.get(node.id);
    this.entries.set(node.id, { node, expiresAt: Date.now() + ttlMs });
    if (!known || known.node.address !== node.address) this.onChange?.(this.list());
  }

  delete(id: string): void {
    if (this.entries.delete(id)) this.onChange?.(this.list());
  }

  /** Replaces the whole list (a registry that answers with full listings). */
  replace(nodes: ServiceNode[]): void {
    const before = this.list()
      .map((n) => `${n.id}@${n.address}`)
      .join(',');
    this.entries.clear();
    for (const node of nodes) this.entries.set(node.id, { node, expiresAt: Infinity });
    if (
      this.list()
        .map((n) => `${n.id}@${n.address}`)
        .join(',') !== before
    )
      this.onChange?.(this.list());
  }

  private list(): ServiceNode[] {
    return [...this.entries.values()].map((e) => e.node);
  }
}
