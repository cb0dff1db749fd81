/**
 * MQTT over WebSockets (what the device SDKs' `MqttWs` transports speak, for
 * networks that block 8883): HTTPS, path `/$iothub/websocket`, subprotocol
 * `mqtt`, every binary message a piece of the same MQTT byte stream the TLS
 * port carries. Each upgraded connection goes to the same broker, so SAS auth,
 * twins, C2D and methods are the TLS port's own.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { createWebSocketStream, WebSocketServer } from 'ws';
import { UnusedConnections } from '../../common/connections.ts';
import type { TlsMaterial } from '../../common/tls.ts';
import type { ClientLimits } from './limits.ts';

export const WEBSOCKET_PATH = '/$iothub/websocket';
const SUBPROTOCOL = 'mqtt';

export interface WebSocketListener {
  server: Server;
  /** Ends the connections that never upgraded (the broker ends the upgraded ones). */
  destroyUnused(): void;
}

export function createWebSocketListener(
  accept: (stream: Duplex, request: IncomingMessage) => void,
  options: { tls: TlsMaterial; logger: Logger; limits: ClientLimits },
): WebSocketListener {
  const { logger, limits } = options;
  const server = createServer({
    cert: options.tls.cert,
    key: options.tls.key,
    minVersion: 'TLSv1.2',
    handshakeTimeout: limits.connectTimeoutMs,
    headersTimeout: limits.connectTimeoutMs,
    requestTimeout: limits.connectTimeoutMs,
  });
  // As on the TLS port: Node leaves a socket whose handshake failed open when someone listens here.
  server.on('tlsClientError', (err, socket) => {
    logger.debug({ err: err.message }, 'TLS handshake failed (WebSocket port)');
    socket.destroy();
  });
  // Plain HTTP requests get an answer instead of waiting for ever.
  server.on('request', (request, response) => {
    const upgradeWanted = request.url?.split('?')[0] === WEBSOCKET_PATH;
    response.writeHead(upgradeWanted ? 426 : 404, upgradeWanted ? { upgrade: 'websocket', connection: 'Upgrade' } : {}).end();
  });
  const unused = new UnusedConnections(server);
  const wss = new WebSocketServer({
    server,
    path: WEBSOCKET_PATH,
    // One WebSocket message carries at most one MQTT packet (mqtt.js writes each packet whole or in pieces).
    maxPayload: limits.maxPacketBytes + 8,
    handleProtocols: (protocols) => (protocols.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
  });
  wss.on('connection', (socket, request) => {
    unused.used(request.socket as Parameters<UnusedConnections['used']>[0]);
    if (socket.protocol !== SUBPROTOCOL) {
      socket.close(1002, 'the subprotocol must be mqtt');
      return;
    }
    const stream = createWebSocketStream(socket);
    stream.on('error', (err) => logger.debug({ err: err.message }, 'WebSocket stream error'));
    accept(stream, request);
  });
  wss.on('error', (err) => logger.debug({ err: err.message }, 'WebSocket server error'));
  return { server, destroyUnused: () => unused.destroy() };
}
