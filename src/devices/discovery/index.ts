/**
 * The registry chosen at start-up (§4.5.1): etcd (default), mdns, kubernetes or static.
 * Each kind's client loads only when chosen, so listing the options loads none of them.
 */
import type { OptionSchema } from '../../common/config.ts';
import { ConfigError } from '../../common/errors.ts';
import type { DevSvcFacts } from '../../common/facts.ts';
import { staticRegistry } from './static.ts';
import { REGISTRY_KINDS, type Registry, type RegistryKind } from './types.ts';

export const DEFAULT_ETCD_ADDRESS = '127.0.0.1:2379';

/** The registry options DevSvc and the data service share. */
export const registryOptions = {
  registry: {
    type: 'string',
    // OFFCLOUD_REGISTRY picks the registry of every devices component at once.
    default: process.env.OFFCLOUD_REGISTRY ?? 'etcd',
    choices: REGISTRY_KINDS,
    description: 'service registry: etcd (key-value), mdns (one machine/LAN), kubernetes (pod labels), static (fixed addresses)',
  },
  registryAddress: {
    type: 'list',
    default: [],
    description: `registry addresses: etcd host:port list [${DEFAULT_ETCD_ADDRESS}], kubernetes API URL [in-cluster], static DevSvc host:port list`,
  },
  registryRefreshMs: {
    type: 'integer',
    default: 5000,
    min: 50,
    max: 600_000,
    description: 'mdns: how often watchers ask again; kubernetes: wait before listing again when a watch stream ends; in ms',
  },
  mdnsInterface: {
    type: 'string',
    default: '',
    description: 'IPv4 address of the interface multicast DNS uses (default: every interface)',
  },
} as const satisfies OptionSchema;

export interface RegistryChoice {
  registry: string;
  registryAddress: string[];
  registryRefreshMs: number;
  mdnsInterface: string;
}

/**
 * Under `offcloud up`: the options that find DevSvc the way it registered, from
 * what it published (static wiring to its address if it fell back to that).
 */
export function registryOfDevSvc(devsvc: DevSvcFacts | undefined): { registry?: string; serviceName?: string; registryAddress?: string[] } {
  if (!devsvc) return {};
  return {
    registry: devsvc.registry,
    serviceName: devsvc.serviceName,
    registryAddress: devsvc.registry === 'static' ? [devsvc.address] : [],
  };
}

export async function openRegistry(choice: RegistryChoice): Promise<Registry> {
  const kind = choice.registry as RegistryKind;
  switch (kind) {
    case 'etcd': {
      const { connectEtcdRegistry } = await import('./etcd.ts');
      return connectEtcdRegistry(choice.registryAddress.length ? choice.registryAddress : [DEFAULT_ETCD_ADDRESS]);
    }
    case 'mdns': {
      const { openMdnsRegistry } = await import('./mdns.ts');
      return openMdnsRegistry({ queryIntervalMs: choice.registryRefreshMs, interfaceAddress: choice.mdnsInterface });
    }
    case 'kubernetes': {
      const { connectKubernetesRegistry, inClusterOptions } = await import('./kubernetes.ts');
      return connectKubernetesRegistry({ ...inClusterOptions(choice.registryAddress[0] ?? ''), pollIntervalMs: choice.registryRefreshMs });
    }
    case 'static':
      return staticRegistry(choice.registryAddress);
    default:
      throw new ConfigError(`unknown registry "${String(kind)}"; choose one of ${REGISTRY_KINDS.join(', ')}`);
  }
}
