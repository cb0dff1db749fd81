/**
 * The devices page's replicas: every DevSvc node the registry lists (the one
 * DevSvc registered in: etcd, mdns, kubernetes or static), each with its gRPC
 * health and what it answers DevSvc.Get for each device of the file. DevSvc
 * has no list call, so the names asked are the file's. The registry is opened
 * on the first call and watched from then on.
 */
import { makeGenericClientConstructor, credentials, Metadata, type Client, type ServiceDefinition, type ServiceError } from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { openRegistry, type RegistryChoice } from '../devices/discovery/index.ts';
import type { NodeWatch, Registry, ServiceNode } from '../devices/discovery/types.ts';
import { devSvcClient, DEVSVC_SERVICE, type DevSvcClient } from '../devices/proto.ts';
import type { Device } from '../devices/store.ts';
import { ConsoleError } from './errors.ts';

const DEADLINE_MS = 3000;

type HealthClient = Client & {
  Check(
    request: { service: string },
    metadata: Metadata,
    options: { deadline: number },
    callback: (error: ServiceError | null, answer?: { status: string }) => void,
  ): void;
};
const Health = makeGenericClientConstructor(healthService as unknown as ServiceDefinition, 'grpc.health.v1.Health');

export interface ReplicaView {
  id: string;
  address: string;
  /** The gRPC health of devices.DevSvc (SERVING, NOT_SERVING, …) or why it did not answer. */
  health: string;
  /** What the replica answers for each device name of the file: active, inactive, unknown to it, or why it did not answer. */
  devices: { name: string; answer: string }[];
}

function unary<T>(call: (deadline: number, callback: (error: ServiceError | null, answer?: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => call(Date.now() + DEADLINE_MS, (error, answer) => (error ? reject(error) : resolve(answer!))));
}

/** One replica's health and devices, over channels opened for this look and closed after it. */
async function lookAt(node: ServiceNode, names: string[]): Promise<ReplicaView> {
  const health = new Health(node.address, credentials.createInsecure()) as unknown as HealthClient;
  const devsvc: DevSvcClient = devSvcClient(node.address);
  try {
    const status = await unary<{ status: string }>((deadline, done) => health.Check({ service: DEVSVC_SERVICE }, new Metadata(), { deadline }, done)).then(
      (answer) => answer.status,
      (err: ServiceError) => `no answer: ${err.details || err.message}`,
    );
    // Each name on its own: one call running out of time marks that device, not the replica.
    const devices = await Promise.all(
      names.map((name) =>
        unary<Device>((deadline, done) => devsvc.Get({ name }, new Metadata(), { deadline }, done)).then(
          (device) => ({ name, answer: !device.name ? 'unknown to it' : device.active ? 'active' : 'inactive' }),
          (err: ServiceError) => ({ name, answer: `no answer: ${err.details || err.message}` }),
        ),
      ),
    );
    return { id: node.id, address: node.address, health: status, devices };
  } finally {
    health.close();
    devsvc.close();
  }
}

export class ReplicaDirectory {
  #watching: Promise<{ registry: Registry; watch: NodeWatch }> | undefined;

  constructor(
    private readonly choice: RegistryChoice,
    readonly serviceName: string,
  ) {}

  /** The registry and its watch of the service; a failed open is tried again on the next call. */
  #watch(): Promise<{ registry: Registry; watch: NodeWatch }> {
    this.#watching ??= (async () => {
      const registry = await openRegistry(this.choice);
      try {
        const watch = await registry.watch(this.serviceName);
        await watch.ready;
        return { registry, watch };
      } catch (err) {
        await registry.close();
        throw err;
      }
    })().catch((err: unknown) => {
      this.#watching = undefined;
      throw new ConsoleError(502, 'RegistryUnreachable', (err as Error).message);
    });
    return this.#watching;
  }

  async replicas(names: string[]): Promise<{ registry: string; serviceName: string; replicas: ReplicaView[] }> {
    const { registry, watch } = await this.#watch();
    const nodes = [...watch.nodes()].sort((a, b) => a.address.localeCompare(b.address) || a.id.localeCompare(b.id));
    return { registry: registry.where, serviceName: this.serviceName, replicas: await Promise.all(nodes.map((node) => lookAt(node, names))) };
  }

  async close(): Promise<void> {
    const watching = await this.#watching?.catch(() => undefined);
    this.#watching = undefined;
    if (!watching) return;
    await watching.watch.stop();
    await watching.registry.close();
  }
}
