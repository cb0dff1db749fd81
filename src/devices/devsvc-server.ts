/**
 * The device lookup service (§2.4, §4.5.1): DevSvc.Get over gRPC, plus the
 * standard health service and server reflection. It listens on any free
 * port, registers a node in the chosen registry with a TTL, re-registers on
 * every heartbeat and deregisters on shutdown.
 */
import { randomUUID } from 'node:crypto';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import { Server, ServerCredentials, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import { ReflectionService } from '@grpc/reflection';
import { withDefaults, type OptionValues, type RuntimeExtras } from '../common/config.ts';
import type { RunningComponent } from '../common/component.ts';
import { ConfigError, StartupError } from '../common/errors.ts';
import { createHttpServer, listen, translateListenError } from '../common/http.ts';
import { ComponentMetrics } from '../common/metrics.ts';
import { createLogger } from '../common/log.ts';
import { cutAfterDrain } from '../common/shutdown.ts';
import { devsvcOptions } from './options.ts';
import { DEVSVC_SERVICE, devicesPackage, devSvcDefinition, PROTO_PATH } from './proto.ts';
import { openRegistry } from './discovery/index.ts';
import { staticRegistry } from './discovery/static.ts';
import { serviceRecord, type Registry } from './discovery/types.ts';
import { DeviceStore, deviceFilePath, type Device } from './store.ts';

/** go-micro-style service names: one key segment, one DNS label. */
/** Largest request message a client may send: gRPC's own default, made explicit (documented under Limits in docs/devices.md). */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

const SERVICE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

export type DevSvcOptions = OptionValues<typeof devsvcOptions>;

export function checkServiceName(name: string): string {
  if (!SERVICE_NAME.test(name)) throw new ConfigError(`invalid --service-name ${JSON.stringify(name)}: letters, digits, '.', '_' and '-', at most 63`);
  return name;
}

/** §4.5.1: an unknown name is not an error; it answers an empty Device. */
export function lookupDevice(store: DeviceStore, name: string): Device {
  return store.get(name) ?? { name: '', active: false };
}

function splitHostPort(address: string): { host: string; port: number } {
  const match = /^\[?([^\]]*)\]?:(\d{1,5})$/.exec(address);
  if (!match || Number(match[2]) > 65535) throw new ConfigError(`invalid --address ${JSON.stringify(address)}: expected host:port`);
  return { host: match[1]!, port: Number(match[2]) };
}

function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** What to tell the registry: a wildcard bind is reachable on this machine's first external IPv4. */
function advertisedHost(host: string): string {
  if (host !== '0.0.0.0' && host !== '::' && host !== '') return host;
  const external = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && i.family === 'IPv4' && !i.internal);
  return external?.address ?? '127.0.0.1';
}

/** In mdns mode: does a watcher on this machine see our own node? Multicast may be off. */
async function mdnsSeesItself(registry: Registry, serviceName: string, nodeId: string): Promise<boolean> {
  let seen: (value: boolean) => void = () => undefined;
  const result = new Promise<boolean>((resolve) => (seen = resolve));
  const watch = await registry.watch(serviceName, (nodes) => nodes.some((n) => n.id === nodeId) && seen(true));
  // Generous: on a loaded machine the loopback round trip can take a while.
  const timer = setTimeout(() => seen(false), 3000);
  try {
    return await result;
  } finally {
    clearTimeout(timer);
    await watch.stop();
  }
}

export async function startDevSvc(given: Partial<DevSvcOptions> & RuntimeExtras = {}): Promise<RunningComponent> {
  const options = withDefaults(devsvcOptions, given);
  const logger = given.logger ?? createLogger(options.logLevel, 'devsvc');
  const serviceName = checkServiceName(options.serviceName);
  const bind = options.address ? splitHostPort(options.address) : { host: options.host, port: 0 };
  if (options.registerInterval >= options.registerTtl) {
    throw new ConfigError(`--register-interval (${options.registerInterval}s) must be shorter than --register-ttl (${options.registerTtl}s)`);
  }

  // The registry first: an unreachable etcd stops start-up before a port is taken.
  let registry = await openRegistry(options);
  const store = await DeviceStore.open(deviceFilePath(options.dataDir), logger).catch(async (err: unknown) => {
    await registry.close();
    throw err;
  });

  const metrics = new ComponentMetrics('devsvc');
  const lookups = metrics.counter('devsvc_lookups_total', 'DevSvc.Get calls, by whether the device is known', ['result']);
  const server = new Server({ 'grpc.max_receive_message_length': MAX_MESSAGE_BYTES });
  // Connections are accepted here and handed to grpc-js, so that the ones that
  // never became a gRPC session (a client silent before its HTTP/2 preface)
  // can be ended: grpc-js's own shutdown, even forced, waits for them for ever.
  const injector = server.createConnectionInjector(ServerCredentials.createInsecure());
  const sockets = new Set<Socket>();
  const listener = createNetServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    injector.injectConnection(socket);
  });
  const cut = () => {
    server.forceShutdown();
    for (const socket of sockets) socket.destroy();
  };
  // On a shutdown signal, calls and connections still open after the drain are cut (a client gone silent mid-call).
  const forgetCut = cutAfterDrain(cut);
  /** For start-up failing after the port is taken. */
  const abandon = () => {
    cut();
    forgetCut();
    listener.close();
    injector.destroy();
  };
  server.addService(devSvcDefinition, {
    Get: (call: ServerUnaryCall<{ name: string }, Device>, callback: sendUnaryData<Device>) => {
      const device = lookupDevice(store, call.request.name);
      lookups.inc({ result: device.name ? 'known' : 'unknown' });
      callback(null, device);
    },
  });
  const health = new HealthImplementation({ '': 'SERVING', [DEVSVC_SERVICE]: 'SERVING' });
  health.addToServer(server);
  new ReflectionService(devicesPackage).addToServer(server);

  let port: number;
  try {
    port = await new Promise<number>((resolve, reject) => {
      listener.once('error', reject);
      listener.listen(bind.port, bind.host, () => resolve((listener.address() as AddressInfo).port));
    });
  } catch (err) {
    forgetCut();
    store.close();
    await registry.close();
    throw translateListenError(err, { host: bind.host, port: bind.port, component: 'devsvc', portKey: 'address' });
  }
  const address = joinHostPort(bind.host, port);
  const advertised = options.advertiseAddress || joinHostPort(advertisedHost(bind.host), port);
  const nodeId = `${serviceName}-${randomUUID()}`;
  const record = serviceRecord(serviceName, nodeId, advertised, registry.kind);

  try {
    await registry.register(record, options.registerTtl);
  } catch (err) {
    abandon();
    store.close();
    await registry.close();
    throw new StartupError(`devsvc: could not register in the ${registry.where}: ${(err as Error).message}`);
  }
  if (registry.kind === 'mdns' && !(await mdnsSeesItself(registry, serviceName, nodeId))) {
    logger.warn(
      'multicast DNS does not reach this machine itself; falling back to static wiring (give the data service --registry static --registry-address ' +
        advertised +
        ')',
    );
    await registry.deregister(record);
    await registry.close();
    registry = staticRegistry([advertised]);
  }
  const heartbeat = setInterval(() => {
    registry.register(record, options.registerTtl).catch((err: unknown) => logger.error({ err }, 'registry heartbeat failed; retrying on the next one'));
  }, options.registerInterval * 1000);
  // gRPC has no /metrics: a small HTTP server beside it serves the metrics and the probes.
  let serving = true;
  const probes = createHttpServer({ logger, metrics, ready: () => serving });
  let probesUrl: string;
  try {
    probesUrl = await listen(probes, { host: options.host, port: options.metricsPort, component: 'devsvc', portKey: 'metricsPort' });
  } catch (err) {
    clearInterval(heartbeat);
    await registry.deregister(record).catch(() => undefined);
    await registry.close();
    abandon();
    store.close();
    throw err;
  }
  logger.info({ address, node: nodeId, registry: registry.where, metrics: `${probesUrl}/metrics` }, 'DevSvc listening and registered');

  return {
    urls: [
      { label: 'gRPC DevSvc', url: `grpc://${address}` },
      { label: 'registry', url: `${registry.where}: ${serviceName} node ${nodeId}` },
      { label: 'metrics', url: `${probesUrl}/metrics` },
    ],
    facts: { devsvc: { registry: registry.kind, serviceName, address: advertised } },
    details: [{ label: 'proto', value: PROTO_PATH }],
    async close() {
      clearInterval(heartbeat);
      serving = false;
      health.setStatus('', 'NOT_SERVING');
      health.setStatus(DEVSVC_SERVICE, 'NOT_SERVING');
      // Leave the registry first so callers stop picking this node, then drain.
      await registry.deregister(record).catch((err: unknown) => logger.warn({ err }, 'deregistration failed; the TTL will remove the node'));
      await registry.close();
      const closed = new Promise((resolve) => listener.close(resolve));
      await new Promise<void>((resolve) => {
        const force = setTimeout(cut, 5000);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      // Calls are over: what is left are connections that never carried one.
      for (const socket of sockets) socket.destroy();
      injector.destroy();
      await closed;
      forgetCut();
      await probes.close();
      store.close();
    },
  };
}
