/**
 * The device endpoint: MQTT 3.1.1 over TLS (§4.11, R-TWIN-1), and over
 * WebSockets (../websocket.ts hands the upgraded sockets here), on aedes, one file per protocol verb beside this one. The hub is not a broker: nothing a
 * device publishes is routed to other devices; each device publish is
 * answered, and everything sent to a device goes to that one client.
 */
import { createServer } from 'node:tls';
import type { Socket } from 'node:net';
import { Aedes, type Client } from 'aedes';
import type { Logger } from 'pino';
import { UnusedConnections } from '../../common/connections.ts';
import { formatHost } from '../../common/http.ts';
import { listenOn } from '../listen.ts';
import { CLIENT_CERTIFICATE_OPTIONS, type TlsMaterial } from '../../common/tls.ts';
import type { DeviceHub } from '../domain/hub.ts';
import { onPuback } from './c2d.ts';
import { connectHandlers, onClientDisconnect, onClientReady } from './connect.ts';
import { onHubEvent } from './events.ts';
import { capPacketSize, type ClientLimits } from './limits.ts';
import { answerPublishesDirectly, authorizePublish } from './publish.ts';
import { readFlowing } from './read.ts';
import { Sessions, type EndpointContext } from './session.ts';
import { authorizeSubscribe, onSubscribe, onUnsubscribe } from './subscribe.ts';
import { createWebSocketStream } from 'ws';
import type { WebSocketAcceptor } from '../websocket.ts';

export interface MqttEndpointOptions {
  host: string;
  port: number;
  tls: TlsMaterial;
  logger: Logger;
  limits: ClientLimits;
}

export interface MqttEndpoint {
  url: string;
  port: number;
  /** MQTT over WebSockets (subprotocol `mqtt`): the upgraded socket joins the same broker. */
  acceptWebSocket: WebSocketAcceptor;
  close(): Promise<void>;
}

export async function startMqttEndpoint(hub: DeviceHub, options: MqttEndpointOptions): Promise<MqttEndpoint> {
  const { logger, limits } = options;
  const context: EndpointContext = { hub, sessions: new Sessions(), logger };
  const broker = await Aedes.createBroker({
    ...connectHandlers(context),
    authorizeSubscribe: authorizeSubscribe(context),
    authorizePublish: authorizePublish(context),
    connectTimeout: limits.connectTimeoutMs,
  });
  hub.onEvent((event) => onHubEvent(context, event));
  broker.on('clientReady', (client) => onClientReady(context, client));
  broker.on('subscribe', (subscriptions, client) => onSubscribe(context, subscriptions, client));
  broker.on('unsubscribe', (topics, client) => onUnsubscribe(context, topics, client));
  broker.on('ack', (_packet, client) => onPuback(context, client));
  broker.on('clientDisconnect', (client) => onClientDisconnect(context, client));
  broker.on('clientError', (client, err) => logger.debug({ clientId: client.id?.slice(0, 256), err: err.message }, 'device connection error'));

  const accept = (client: Client) => {
    capPacketSize(client, limits);
    answerPublishesDirectly(context, client);
    readFlowing(client);
  };
  const server = createServer(
    { cert: options.tls.cert, key: options.tls.key, ...CLIENT_CERTIFICATE_OPTIONS, minVersion: 'TLSv1.2', handshakeTimeout: limits.connectTimeoutMs },
    (socket) => accept(broker.handle(socket)),
  );
  // A failed or timed-out handshake (an untrusting client, a port scan, a client that never
  // speaks) is that connection's problem only. With a listener here Node leaves the socket
  // open, so it is ended here, or it would stay for ever.
  server.on('tlsClientError', (err, socket) => {
    logger.debug({ err: err.message }, 'TLS handshake failed');
    socket.destroy();
  });
  // The broker ends the devices it accepted on close; these are the others.
  const unused = new UnusedConnections(server);
  broker.on('client', (client) => unused.used(client.conn as Socket));
  const closeServer = () => new Promise<void>((resolve) => server.close(() => resolve()));
  let port: number;
  try {
    port = await listenOn(server, options.host, options.port, 'port');
  } catch (err) {
    await new Promise<void>((resolve) => broker.close(() => resolve()));
    await closeServer();
    throw err;
  }
  return {
    url: `mqtts://${formatHost(options.host)}:${port}`,
    port,
    acceptWebSocket(socket, request) {
      const stream = createWebSocketStream(socket);
      stream.on('error', (err) => logger.debug({ err: err.message }, 'WebSocket stream error'));
      accept(broker.handle(stream, request));
    },
    async close() {
      // Presence is shared in scale-out: a replica that shuts down says its devices are gone.
      await Promise.allSettled(context.sessions.all().map((s) => hub.deviceDisconnected(s.key, s.connectionId)));
      // No new connection after this, so none is left out of the ones ended below.
      const stopped = closeServer();
      await new Promise<void>((resolve) => broker.close(() => resolve()));
      // Connections mid-TLS-handshake or without an accepted CONNECT: the broker does not know them.
      unused.destroy();
      await stopped;
    },
  };
}
