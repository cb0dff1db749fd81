/**
 * Fixed addresses instead of discovery: the data service calls the listed
 * DevSvc addresses in turn. Registering is a no-op. `offcloud up` falls back
 * to it where multicast does not work.
 */
import type { Registry, ServiceNode } from './types.ts';

export function staticRegistry(addresses: string[]): Registry {
  const nodes: ServiceNode[] = addresses.map((address, i) => ({ id: `static-${i}`, address, metadata: {} }));
  return {
    kind: 'static',
    where: addresses.length ? `static addresses ${addresses.join(',')}` : 'static (no addresses)',
    register: async () => undefined,
    deregister: async () => undefined,
    watch: async () => ({ nodes: () => nodes, ready: Promise.resolve(), stop: async () => undefined }),
    close: async () => undefined,
  };
}
