/**
 * The platform's native registration, in go-micro's Kubernetes layout: a
 * replica patches its own pod with the labels `micro.mu/type=service` and
 * `micro.mu/selector-<svc>=service` and the annotation
 * `micro.mu/service-<svc>` = JSON of the service record; it patches them to
 * null on shutdown. Watchers list pods by the selector label, then follow
 * the API's watch stream from the listing's resourceVersion, keeping pods that
 * are Running and not being deleted; when the stream ends they list again.
 * Pod lifetime is the TTL here: Kubernetes removes a dead pod, so the
 * heartbeat only re-applies the patch.
 */
import { readFileSync, existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { registryUnreachable } from '../errors.ts';
import { NodeCache, parseServiceRecord, type NodeWatch, type Registry, type ServiceNode, type ServiceRecord } from './types.ts';

const SERVICE_ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';
const LABEL_TYPE = 'micro.mu/type';
const SELECTOR_PREFIX = 'micro.mu/selector-';
const ANNOTATION_PREFIX = 'micro.mu/service-';

/** go-micro's label-safe form of a service name. */
export function labelSafe(name: string): string {
  return name.replace(/[^-A-Za-z0-9_.]/g, '_');
}

export interface KubernetesRegistryOptions {
  /** API server base URL; default from KUBERNETES_SERVICE_HOST/PORT (in-cluster). */
  apiUrl: string;
  namespace: string;
  /** This replica's pod; $HOSTNAME inside a pod. */
  podName: string;
  /** Service-account bearer token, when the API needs one. */
  token?: string;
  /** PEM CA of the API server, for https. */
  ca?: string;
  /** How long a watcher waits before listing again after its watch stream ended or failed. */
  pollIntervalMs?: number;
}

/** In-cluster settings from the environment and the mounted service account. */
export function inClusterOptions(apiUrl: string, env: NodeJS.ProcessEnv = process.env): KubernetesRegistryOptions {
  const read = (file: string) => (existsSync(`${SERVICE_ACCOUNT}/${file}`) ? readFileSync(`${SERVICE_ACCOUNT}/${file}`, 'utf8').trim() : undefined);
  const host = env.KUBERNETES_SERVICE_HOST;
  const url = apiUrl || (host ? `https://${host.includes(':') ? `[${host}]` : host}:${env.KUBERNETES_SERVICE_PORT ?? '443'}` : '');
  return {
    apiUrl: url,
    namespace: read('namespace') ?? 'default',
    podName: env.HOSTNAME ?? hostname(),
    token: read('token'),
    ca: read('ca.crt'),
  };
}

interface Pod {
  metadata?: { name?: string; annotations?: Record<string, string>; deletionTimestamp?: string };
  status?: { phase?: string };
}
interface PodList {
  metadata?: { resourceVersion?: string };
  items?: Pod[];
}
/** One line of the watch stream. */
interface WatchEvent {
  type?: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object?: Pod;
}

export async function connectKubernetesRegistry(options: KubernetesRegistryOptions): Promise<Registry> {
  if (!options.apiUrl) {
    throw registryUnreachable('kubernetes', '(none)', 'not in a cluster: KUBERNETES_SERVICE_HOST is unset and no --registry-address was given');
  }
  const base = options.apiUrl.replace(/\/$/, '');
  const dispatcher = new Agent({ connect: options.ca ? { ca: options.ca } : {} });
  const pods = `${base}/api/v1/namespaces/${encodeURIComponent(options.namespace)}/pods`;
  const headers = (extra: Record<string, string> = {}) => ({
    accept: 'application/json',
    ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
    ...extra,
  });

  const call = async (method: 'GET' | 'PATCH', url: string, body?: unknown): Promise<unknown> => {
    const response = await request(url, {
      method,
      dispatcher,
      headers: headers(body === undefined ? {} : { 'content-type': 'application/strategic-merge-patch+json' }),
      body: body === undefined ? undefined : JSON.stringify(body),
      headersTimeout: 5000,
      bodyTimeout: 5000,
    });
    const text = await response.body.text();
    if (response.statusCode >= 300) throw new Error(`${method} ${url} answered ${response.statusCode}: ${text.slice(0, 200)}`);
    return JSON.parse(text) as unknown;
  };

  const patchOwnPod = (service: ServiceRecord, value: ServiceRecord | null) => {
    const svc = labelSafe(service.name);
    return call('PATCH', `${pods}/${encodeURIComponent(options.podName)}`, {
      metadata: {
        labels: value ? { [LABEL_TYPE]: 'service', [SELECTOR_PREFIX + svc]: 'service' } : { [SELECTOR_PREFIX + svc]: null },
        annotations: { [ANNOTATION_PREFIX + svc]: value ? JSON.stringify(value) : null },
      },
    });
  };

  /** The nodes a pod carries for a service: none unless it is Running and not being deleted. */
  const nodesOfPod = (pod: Pod, svc: string): ServiceNode[] =>
    pod.status?.phase === 'Running' && !pod.metadata?.deletionTimestamp
      ? (parseServiceRecord(pod.metadata?.annotations?.[ANNOTATION_PREFIX + svc] ?? '')?.nodes ?? [])
      : [];

  /** Lists, then follows the watch stream until it ends; `podNodes` holds the nodes by pod. */
  const listAndFollow = async (svc: string, podNodes: Map<string, ServiceNode[]>, publish: () => void, signal: AbortSignal) => {
    const selector = `labelSelector=${encodeURIComponent(`${SELECTOR_PREFIX}${svc}=service`)}`;
    const list = (await call('GET', `${pods}?${selector}`)) as PodList;
    podNodes.clear();
    for (const pod of list.items ?? []) podNodes.set(pod.metadata?.name ?? '', nodesOfPod(pod, svc));
    publish();
    const version = encodeURIComponent(list.metadata?.resourceVersion ?? '');
    const response = await request(`${pods}?${selector}&watch=true&resourceVersion=${version}`, { dispatcher, headers: headers(), signal, bodyTimeout: 0 });
    if (response.statusCode >= 300) {
      await response.body.dump();
      throw new Error(`watch answered ${response.statusCode}`);
    }
    let buffered = '';
    for await (const chunk of response.body) {
      buffered += (chunk as Buffer).toString();
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline).trim();
        buffered = buffered.slice(newline + 1);
        if (!line) continue;
        const event = JSON.parse(line) as WatchEvent;
        // ERROR (e.g. 410 Gone: the version is too old): list again.
        if (event.type === 'ERROR') return;
        const name = event.object?.metadata?.name ?? '';
        if (event.type === 'DELETED') podNodes.delete(name);
        else if ((event.type === 'ADDED' || event.type === 'MODIFIED') && event.object) podNodes.set(name, nodesOfPod(event.object, svc));
        publish();
      }
    }
  };

  try {
    await call('GET', `${pods}?limit=1`);
  } catch (err) {
    await dispatcher.close();
    throw registryUnreachable('kubernetes', base, (err as Error).message);
  }

  return {
    kind: 'kubernetes',
    where: `kubernetes API at ${base} (namespace ${options.namespace}, pod ${options.podName})`,
    register: async (service) => void (await patchOwnPod(service, service)),
    deregister: async (service) => void (await patchOwnPod(service, null)),
    async watch(serviceName, onChange): Promise<NodeWatch> {
      const cache = new NodeCache(onChange);
      const podNodes = new Map<string, ServiceNode[]>();
      let listed: () => void = () => undefined;
      const ready = new Promise<void>((resolve) => (listed = resolve));
      const publish = () => {
        cache.replace([...podNodes.values()].flat());
        listed();
      };
      const aborter = new AbortController();
      const loop = async () => {
        while (!aborter.signal.aborted) {
          // A failed listing or a broken stream keeps the last known nodes; the next round lists again.
          await listAndFollow(labelSafe(serviceName), podNodes, publish, aborter.signal).catch(() => undefined);
          listed();
          if (!aborter.signal.aborted) await sleep(options.pollIntervalMs ?? 5000, undefined, { signal: aborter.signal }).catch(() => undefined);
        }
      };
      const running = loop();
      return {
        nodes: () => cache.nodes(),
        ready,
        stop: async () => {
          aborter.abort();
          await running;
        },
      };
    },
    close: () => dispatcher.close(),
  };
}
