/**
 * The device endpoint: MQTT 3.1.1 over TLS (§4.11, R-TWIN-1) on aedes. The hub
 * is not a broker: nothing a device publishes is routed to other devices.
 * Each device publish is answered here, and everything sent to a device goes
 * to that one client (`client.publish`), never through the broker's routing.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:tls';
import type { AddressInfo, Socket } from 'node:net';
import { Aedes, type AuthenticateError, type Client, type PublishPacket } from 'aedes';
import type { Logger } from 'pino';
import { UnusedConnections } from '../common/connections.ts';
import { formatHost, translateListenError } from '../common/http.ts';
import type { TlsMaterial } from '../common/tls.ts';
import type { HubEvent } from './bus.ts';
import { deviceErrorBody, HubError, toHubError } from './errors.ts';
import { ConnectRefused, type DeviceConnection, type DeviceHub } from './hub.ts';
import { encodePropertyBag, parsePropertyBag } from './messages.ts';
import {
  c2dTopic,
  desiredPatchTopic,
  methodRequestTopic,
  parsePublishTopic,
  subscriptionKind,
  twinResponseTopic,
  type SubscriptionKind,
} from './topics.ts';

/** One connected device or module. */
class DeviceSession {
  readonly connectionId = randomUUID();
  readonly subscriptions = new Set<SubscriptionKind>();
  /** Method request ids sent to this device, and the replica waiting for each answer. */
  readonly methodOrigins = new Map<string, string>();
  c2dInflight: string | undefined;
  pumping = false;
  closed = false;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(
    readonly client: Client,
    readonly connection: DeviceConnection,
    /** CleanSession 0: the C2D subscription outlives the connection. */
    readonly keepSession: boolean,
  ) {}

  get key(): string {
    return this.connection.key;
  }

  /** Publishes from one device are handled in order, even when aedes reads several at once. */
  serially<T>(task: () => Promise<T>): Promise<T> {
    const next = this.tail.then(task, task);
    this.tail = next.catch(() => undefined);
    return next;
  }

  send(topic: string, payload: string | Buffer, qos: 0 | 1 = 0): void {
    const packet: PublishPacket = { cmd: 'publish', topic, payload, qos, retain: false, dup: false };
    this.client.publish(packet, () => undefined);
  }
}

export interface MqttEndpointOptions {
  host: string;
  port: number;
  tls: TlsMaterial;
  logger: Logger;
}

export interface MqttEndpoint {
  url: string;
  port: number;
  close(): Promise<void>;
}

function refused(message: string): AuthenticateError {
  return Object.assign(new Error(message), { returnCode: 5 as const });
}

export async function startMqttEndpoint(hub: DeviceHub, options: MqttEndpointOptions): Promise<MqttEndpoint> {
  const { logger } = options;
  const sessions = new Map<string, DeviceSession>();
  const byClient = new WeakMap<Client, DeviceSession>();
  const keepSessionWanted = new WeakMap<Client, boolean>();

  const broker = await Aedes.createBroker({
    // Our own C2D queue holds messages between connections, so aedes keeps no session state.
    preConnect(client, packet, callback) {
      keepSessionWanted.set(client, !packet.clean);
      packet.clean = true;
      callback(null, true);
    },
    authenticate(client, username, password, callback) {
      hub.authenticateDevice(client.id, username, password).then(
        (connection) => {
          byClient.set(client, new DeviceSession(client, connection, keepSessionWanted.get(client) ?? false));
          callback(null, true);
        },
        (err: unknown) => {
          if (err instanceof ConnectRefused) logger.info({ clientId: client.id.slice(0, 256), reason: err.message }, 'device connection refused');
          else logger.error({ err }, 'device authentication failed');
          callback(refused('not authorized'), null);
        },
      );
    },
    authorizeSubscribe(client, subscription, callback) {
      const session = byClient.get(client);
      const kind = session && subscriptionKind(subscription.topic, session.connection.identity);
      if (!session || !kind) {
        logger.info({ key: session?.key, topic: subscription.topic.slice(0, 256) }, 'subscription refused');
        callback(null, null);
        return;
      }
      // Recorded before SUBACK goes out, so an answer to the next publish finds it.
      session.subscriptions.add(kind);
      callback(null, subscription);
    },
    authorizePublish(client, packet, callback) {
      const session = client && byClient.get(client);
      if (!session) return callback(new Error('not connected'));
      if (packet.qos === 2) {
        logger.info({ key: session.key }, 'QoS 2 publish refused: connection closed');
        return callback(new Error('QoS 2 is not supported'));
      }
      const retained = packet.retain;
      // Nothing is kept for later subscribers: a retained telemetry topic would be stored forever.
      packet.retain = false;
      session.serially(() => handlePublish(session, packet, retained)).then(
        () => callback(null),
        (err: unknown) => {
          logger.info({ key: session.key, topic: packet.topic.slice(0, 256), reason: (err as Error).message }, 'publish refused: connection closed');
          callback(err as Error);
        },
      );
    },
  });

  async function handlePublish(session: DeviceSession, packet: PublishPacket, retained: boolean): Promise<void> {
    const request = parsePublishTopic(packet.topic, session.connection.identity);
    if (!request) throw new Error('topic not allowed');
    const payload = Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload);
    switch (request.kind) {
      case 'telemetry': {
        const bag = parsePropertyBag(request.bag);
        if (retained) bag.properties['mqtt-retain'] = 'true';
        await hub.recordTelemetry(session.connection.identity, bag, payload, Buffer.byteLength(packet.topic));
        return;
      }
      case 'method-response': {
        const origin = session.methodOrigins.get(request.rid);
        if (origin === undefined) return;
        session.methodOrigins.delete(request.rid);
        await hub.methodResponse(request.rid, origin, request.status, payload);
        return;
      }
      default:
        return answerTwinRequest(session, request.kind, request.rid, payload);
    }
  }

  async function answerTwinRequest(session: DeviceSession, kind: 'twin-get' | 'twin-patch-reported', rid: string, payload: Buffer): Promise<void> {
    if (!session.connection.twinAllowed) {
      // §7: twin operations need api-version 2016-11-14 or newer in the username.
      throw new Error('twin operation without api-version');
    }
    let topic: string;
    let body: string;
    try {
      if (kind === 'twin-get') {
        body = JSON.stringify(await hub.deviceTwin(session.key));
        topic = twinResponseTopic(200, rid);
      } else {
        topic = twinResponseTopic(204, rid, await hub.patchReported(session.key, payload));
        body = '';
      }
    } catch (err) {
      const error = toHubError(err);
      if (!(err instanceof HubError)) logger.error({ err, key: session.key }, 'twin operation failed');
      topic = twinResponseTopic(error.status, rid);
      body = deviceErrorBody(error);
    }
    if (session.subscriptions.has('twin-responses')) session.send(topic, body);
  }

  async function pumpC2d(session: DeviceSession): Promise<void> {
    if (session.pumping || session.c2dInflight || session.closed || !session.subscriptions.has('c2d')) return;
    session.pumping = true;
    try {
      const message = await hub.store.nextC2d(session.connection.identity.deviceId);
      if (!message || session.closed) return;
      session.c2dInflight = message.id;
      session.send(c2dTopic(session.connection.identity.deviceId, encodePropertyBag(message)), Buffer.from(message.payload, 'base64'), 1);
    } catch (err) {
      logger.error({ err, key: session.key }, 'cloud-to-device delivery failed');
    } finally {
      session.pumping = false;
    }
  }

  function onHubEvent(event: HubEvent): void {
    switch (event.type) {
      case 'c2d': {
        const session = sessions.get(event.deviceId);
        if (session) void pumpC2d(session);
        return;
      }
      case 'desired': {
        const session = sessions.get(event.key);
        if (session?.subscriptions.has('desired')) session.send(desiredPatchTopic(Number(event.patch.$version)), JSON.stringify(event.patch));
        return;
      }
      case 'method-request': {
        const session = sessions.get(event.key);
        if (!session) return;
        if (!session.subscriptions.has('methods')) {
          void hub.bus.publish({ type: 'method-response', rid: event.rid, status: 404, payload: null, origin: event.origin, notSubscribed: true });
          return;
        }
        session.methodOrigins.set(event.rid, event.origin);
        // An answer after the caller gave up is dropped, and so is the entry.
        setTimeout(() => session.methodOrigins.delete(event.rid), event.timeoutMs).unref();
        session.send(methodRequestTopic(event.methodName, event.rid), JSON.stringify(event.payload));
        return;
      }
      case 'connected': {
        const session = sessions.get(event.key);
        if (session && session.connectionId !== event.connectionId) session.client.close();
        return;
      }
      case 'revoked':
        sessions.get(event.key)?.client.close();
        return;
      default:
        return;
    }
  }
  hub.bus.subscribe(onHubEvent);

  broker.on('clientReady', (client) => {
    const session = byClient.get(client);
    if (!session) return;
    const { key } = session;
    const deviceId = session.connection.identity.deviceId;
    sessions.set(key, session);
    void (async () => {
      await hub.store.setOnline(key, session.connectionId);
      await hub.bus.publish({ type: 'connected', key, connectionId: session.connectionId });
      if (session.connection.identity.moduleId) return;
      if (!session.keepSession) await hub.store.setPersistentC2dSubscription(deviceId, false);
      else if (await hub.store.hasPersistentC2dSubscription(deviceId)) {
        session.subscriptions.add('c2d');
        await pumpC2d(session);
      }
    })().catch((err: unknown) => logger.error({ err, key }, 'connection bookkeeping failed'));
  });

  broker.on('subscribe', (subscriptions, client) => {
    const session = byClient.get(client);
    if (!session) return;
    const c2d = subscriptions.some((s) => (s.qos as number) !== 128 && subscriptionKind(s.topic, session.connection.identity) === 'c2d');
    if (!c2d) return;
    void (async () => {
      if (session.keepSession) await hub.store.setPersistentC2dSubscription(session.connection.identity.deviceId, true);
      await pumpC2d(session);
    })().catch((err: unknown) => logger.error({ err, key: session.key }, 'subscription bookkeeping failed'));
  });

  broker.on('unsubscribe', (topics, client) => {
    const session = byClient.get(client);
    // aedes also "unsubscribes" everything of a closing connection; only a device's UNSUBSCRIBE counts.
    if (!session || client.closed) return;
    for (const topic of topics) {
      const kind = subscriptionKind(topic, session.connection.identity);
      if (!kind) continue;
      session.subscriptions.delete(kind);
      if (kind === 'c2d') void hub.store.setPersistentC2dSubscription(session.connection.identity.deviceId, false);
    }
  });

  // Only C2D messages go out at QoS 1, one at a time per device, so a PUBACK completes the one in flight.
  broker.on('ack', (_packet, client) => {
    const session = byClient.get(client);
    if (!session?.c2dInflight) return;
    const id = session.c2dInflight;
    void hub.store
      .completeC2d(session.connection.identity.deviceId, id)
      .then(() => {
        // Completed: the next pending message may go out.
        if (session.c2dInflight === id) session.c2dInflight = undefined;
        return pumpC2d(session);
      })
      .catch((err: unknown) => logger.error({ err, key: session.key }, 'cloud-to-device completion failed'));
  });

  broker.on('clientDisconnect', (client) => {
    const session = byClient.get(client);
    if (!session) return;
    session.closed = true;
    if (sessions.get(session.key) === session) {
      sessions.delete(session.key);
      void hub.store.setOffline(session.key, session.connectionId).catch((err: unknown) => logger.error({ err }, 'presence update failed'));
    }
  });

  broker.on('clientError', (client, err) => logger.debug({ clientId: client.id?.slice(0, 256), err: err.message }, 'device connection error'));

  const server: Server = createServer({ cert: options.tls.cert, key: options.tls.key, minVersion: 'TLSv1.2' }, (socket) => {
    broker.handle(socket);
  });
  // A failed handshake (an untrusting client, a port scan) is that connection's problem only.
  server.on('tlsClientError', (err) => logger.debug({ err: err.message }, 'TLS handshake failed'));
  // The broker ends the devices it accepted on close; these are the others.
  const unused = new UnusedConnections(server);
  broker.on('client', (client) => unused.used(client.conn as Socket));
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(translateListenError(err, { host: options.host, port: options.port, component: 'hub' })));
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `mqtts://${formatHost(options.host)}:${port}`,
    port,
    async close() {
      // Presence is shared in scale-out: a replica that shuts down says its devices are gone.
      await Promise.allSettled([...sessions.values()].map((s) => hub.store.setOffline(s.key, s.connectionId)));
      // No new connection after this, so none is left out of the ones ended below.
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      await new Promise<void>((resolve) => broker.close(() => resolve()));
      // Connections mid-TLS-handshake or without an accepted CONNECT: the broker does not know them.
      unused.destroy();
      await stopped;
    },
  };
}
