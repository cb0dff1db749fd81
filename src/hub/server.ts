import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Server } from 'node:https';
import { formatHost } from '../common/http.ts';
import { ComponentMetrics } from '../common/metrics.ts';
import { withDefaults, type OptionValues, type RuntimeExtras } from '../common/config.ts';
import type { RunningComponent } from '../common/component.ts';
import type { HubFacts } from '../common/facts.ts';
import { createLogger } from '../common/log.ts';
import { resolveTls } from '../common/tls.ts';
import { DeviceHub, type HubActivity } from './domain/hub.ts';
import { connectionString, identityKey } from './domain/registry.ts';
import { DEFAULT_TWIN_LIMITS } from './domain/twin.ts';
import { startMqttEndpoint } from './mqtt/endpoint.ts';
import { AMQP_MAX_FRAME_BYTES, startAmqpEndpoint } from './amqp/endpoint.ts';
import { DEFAULT_CLIENT_LIMITS } from './mqtt/limits.ts';
import { hubOptions } from './options.ts';
import { openState } from './persistence/open.ts';
import { startRestApi } from './rest.ts';
import { listenOn } from './listen.ts';
import { createWebSocketListener, DeviceWebSockets, WEBSOCKET_PATH, type WebSocketListener } from './websocket.ts';

export type HubOptions = OptionValues<typeof hubOptions>;

async function closeWebSocketListener(listener: WebSocketListener | undefined): Promise<void> {
  if (!listener?.server.listening) return;
  const stopped = new Promise<void>((resolve) => listener.server.close(() => resolve()));
  listener.destroyUnused();
  await stopped;
}

/** The device hub (§4.11): MQTT over TLS and over WebSockets for devices, HTTPS REST for the cloud side. */
export async function startHub(given: Partial<HubOptions> & RuntimeExtras & { clock?: () => number } = {}): Promise<RunningComponent> {
  const options = withDefaults(hubOptions, given);
  const logger = given.logger ?? createLogger(options.logLevel, 'hub');
  const tls = await resolveTls(options);
  const fileUploads = options.fileUploadConnectionString
    ? {
        // The storage SDK loads only for a hub that takes uploads.
        storage: (await import('./upload-storage.ts')).openUploadStorage(
          options.fileUploadConnectionString,
          options.fileUploadContainer,
          tls.caCertPath ? await readFile(tls.caCertPath, 'utf8') : undefined,
        ),
        sasTtlSeconds: options.fileUploadSasTtlSeconds,
        notify: options.fileUploadNotifications,
      }
    : undefined;
  const { store, bus } = await openState(options, true);
  const metrics = new ComponentMetrics('hub');
  // Counted here and handed to prom-client when scraped: its inc() with a label costs about 1 µs,
  // and telemetry counts once per message.
  const activity = new Map<HubActivity, number>();
  metrics.counter('hub_activity_total', 'device and service operations on this replica, by kind', ['kind'], (counter) => {
    counter.reset();
    for (const [kind, count] of activity) counter.inc({ kind }, count);
  });
  const hub = new DeviceHub(
    store,
    bus,
    {
      count: (kind) => activity.set(kind, (activity.get(kind) ?? 0) + 1),
      hostName: options.hostName,
      limits: { ...DEFAULT_TWIN_LIMITS, maxDepth: options.twinMaxDepth },
      c2dTtlSeconds: options.c2dTtlSeconds,
      c2dMaxDeliveryCount: options.c2dMaxDeliveryCount,
      ...(given.clock ? { now: given.clock } : {}),
      telemetryLogSize: options.telemetryLogSize,
      replicaId: randomUUID(),
      ...(fileUploads ? { fileUploads } : {}),
    },
    logger,
  );
  await hub.restoreFeedback();
  let mqtt;
  let amqp;
  let rest;
  let webSocketListener: WebSocketListener | undefined;
  let webSocketUrl: string;
  try {
    const limits = { ...DEFAULT_CLIENT_LIMITS, connectTimeoutMs: options.connectTimeoutMs };
    mqtt = await startMqttEndpoint(hub, { host: options.host, port: options.port, tls, logger, limits });
    amqp = await startAmqpEndpoint(hub, { host: options.host, port: options.amqpPort, tls, logger, connectTimeoutMs: options.connectTimeoutMs });
    rest = await startRestApi(hub, { host: options.host, port: options.restPort, tls: { ...tls, requestClientCertificate: true }, logger, metrics });
    // One MQTT packet's worth per WebSocket message, or a few AMQP frames (AMQP_MAX_FRAME_BYTES each).
    const webSockets = new DeviceWebSockets({
      logger,
      acceptors: { mqtt: mqtt.acceptWebSocket, AMQPWSB10: amqp.acceptWebSocket },
      maxPayload: limits.maxPacketBytes + 4 * AMQP_MAX_FRAME_BYTES,
    });
    if (options.webSocketPort === options.restPort) {
      webSockets.attach(rest.app.server as Server);
      webSocketUrl = `${rest.url.replace(/^https:/, 'wss:')}${WEBSOCKET_PATH}`;
    } else {
      webSocketListener = createWebSocketListener(webSockets, { tls, logger, connectTimeoutMs: options.connectTimeoutMs });
      const port = await listenOn(webSocketListener.server, options.host, options.webSocketPort, 'webSocketPort');
      webSocketUrl = `wss://${formatHost(options.host)}:${port}${WEBSOCKET_PATH}`;
    }
  } catch (err) {
    await Promise.allSettled([mqtt?.close(), amqp?.close(), rest?.app.close(), closeWebSocketListener(webSocketListener)]);
    await hub.close();
    throw err;
  }
  const facts: HubFacts = {
    hostName: options.hostName,
    mqttUrl: mqtt.url,
    webSocketUrl,
    amqpUrl: amqp.url,
    restUrl: rest.url,
    serviceConnectionString: `HostName=${options.hostName};SharedAccessKeyName=iothubowner;SharedAccessKey=${await hub.policyKey('iothubowner')}`,
  };
  if (options.demoDevice) {
    const demo = await hub.ensureDevice(options.demoDevice);
    facts.demoDevice = { deviceId: identityKey(demo), primaryKey: demo.keys.primaryKey, connectionString: connectionString(options.hostName, mqtt.port, demo) };
  }
  logger.info({ mqtt: mqtt.url, amqp: amqp.url, webSocket: webSocketUrl, rest: rest.url }, 'hub listening');
  return {
    urls: [
      { label: 'MQTT over TLS (devices)', url: mqtt.url },
      { label: 'REST (service, SAS iothubowner)', url: rest.url },
      { label: 'MQTT and AMQP over WebSockets (devices)', url: webSocketUrl },
      { label: 'AMQP over TLS (devices, service C2D and feedback)', url: amqp.url },
    ],
    facts: { hub: facts },
    details: [
      { label: 'hub host name', value: facts.hostName },
      ...(facts.demoDevice ? [{ label: `device ${facts.demoDevice.deviceId} connection string`, value: facts.demoDevice.connectionString }] : []),
      { label: 'service connection string (iothubowner)', value: facts.serviceConnectionString },
    ],
    caCertPath: tls.caCertPath,
    async close() {
      await Promise.allSettled([mqtt.close(), amqp.close(), rest.app.close(), closeWebSocketListener(webSocketListener)]);
      await hub.close();
    },
  };
}
