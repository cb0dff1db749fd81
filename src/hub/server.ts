import { randomUUID } from 'node:crypto';
import { withDefaults, type OptionValues, type RuntimeExtras } from '../common/config.ts';
import type { RunningComponent } from '../common/component.ts';
import { createLogger } from '../common/log.ts';
import { resolveTls } from '../common/tls.ts';
import { LocalBus, type HubBus } from './bus.ts';
import { DeviceHub } from './hub.ts';
import { startMqttEndpoint } from './mqtt.ts';
import { hubOptions } from './options.ts';
import { openRedis } from './redis.ts';
import { connectionString, createIdentityRecord, identityKey, type IdentityRecord } from './registry.ts';
import { startRestApi } from './rest.ts';
import { FileStore, type HubStore } from './store.ts';
import { DEFAULT_TWIN_LIMITS } from './twin.ts';

export type HubOptions = OptionValues<typeof hubOptions>;

/** The store and bus for these options: files and an in-process bus, or Redis for both. */
export async function openState(options: Pick<HubOptions, 'redisUrl' | 'hostName' | 'dataDir'>): Promise<{ store: HubStore; bus: HubBus }> {
  if (options.redisUrl) return openRedis(options.redisUrl, options.hostName);
  return { store: new FileStore(options.dataDir), bus: new LocalBus() };
}

async function ensureDemoDevice(store: HubStore, deviceId: string): Promise<IdentityRecord> {
  const existing = await store.getIdentity(deviceId);
  if (existing) return existing;
  try {
    return await store.createIdentity(createIdentityRecord({ deviceId }));
  } catch {
    // Another replica made it first.
    return (await store.getIdentity(deviceId))!;
  }
}

/** The device hub (§4.11): MQTT over TLS for devices, HTTPS REST for the cloud side. */
export async function startHub(given: Partial<HubOptions> & RuntimeExtras = {}): Promise<RunningComponent> {
  const options = withDefaults(hubOptions, given);
  const logger = given.logger ?? createLogger(options.logLevel, 'hub');
  const tls = await resolveTls(options);
  const { store, bus } = await openState(options);
  const hub = new DeviceHub(store, bus, {
    hostName: options.hostName,
    limits: { ...DEFAULT_TWIN_LIMITS, maxDepth: options.twinMaxDepth },
    c2dTtlSeconds: options.c2dTtlSeconds,
    telemetryLogSize: options.telemetryLogSize,
    replicaId: randomUUID(),
  }, logger);
  const closeState = async () => {
    hub.close();
    await bus.close();
    await store.close();
  };
  let mqtt;
  let rest;
  try {
    mqtt = await startMqttEndpoint(hub, { host: options.host, port: options.port, tls, logger });
    rest = await startRestApi(hub, { host: options.host, port: options.restPort, tls, logger });
  } catch (err) {
    await mqtt?.close();
    await closeState();
    throw err;
  }
  const policies = await store.policies();
  const owner = policies.iothubowner!;
  const credentials = [`hub host name: ${options.hostName}`];
  if (options.demoDevice) {
    const demo = await ensureDemoDevice(store, options.demoDevice);
    credentials.push(`device ${identityKey(demo)}: ${connectionString(options.hostName, mqtt.port, demo)}`);
  }
  credentials.push(`service: HostName=${options.hostName};SharedAccessKeyName=iothubowner;SharedAccessKey=${owner.primaryKey}`);
  logger.info({ mqtt: mqtt.url, rest: rest.url }, 'hub listening');
  return {
    urls: [
      { label: 'MQTT over TLS (devices)', url: mqtt.url },
      { label: 'REST (service, SAS iothubowner)', url: rest.url },
    ],
    credentials,
    caCertPath: tls.caCertPath,
    exports: { hubHostName: options.hostName, hubMqttUrl: mqtt.url, hubRestUrl: rest.url },
    async close() {
      await Promise.allSettled([mqtt.close(), rest.app.close()]);
      await closeState();
    },
  };
}
