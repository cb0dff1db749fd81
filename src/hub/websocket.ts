/**
 * Devices over WebSockets, as the real hub serves them: HTTPS, path
 * `/$iothub/websocket`, the subprotocol naming what the binary messages carry
 * (`mqtt` for MQTT, `AMQPWSB10` for AMQP 1.0). Upgrades are taken on the REST
 * listener (one port for the service SDK and every device transport, 443 on the
 * real hub), and on a port of their own when `--web-socket-port` names another.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import { UnusedConnections } from '../common/connections.ts';
import { CLIENT_CERTIFICATE_OPTIONS, type TlsMaterial } from '../common/tls.ts';

export const WEBSOCKET_PATH = '/$iothub/websocket';

/** Takes an accepted WebSocket: its protocol (MQTT, AMQP) owns it from here. */
export type WebSocketAcceptor = (socket: WebSocket, request: IncomingMessage) => void;

export interface DeviceWebSocketOptions {
  logger: Logger;
  /** By subprotocol: `mqtt`, `AMQPWSB10`. */
  acceptors: Record<string, WebSocketAcceptor>;
  /** Largest WebSocket message (one MQTT packet or AMQP frame's worth). */
  maxPayload: number;
}

export class DeviceWebSockets {
  private readonly wss: WebSocketServer;

  constructor(private readonly options: DeviceWebSocketOptions) {
    const { acceptors, logger } = options;
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: options.maxPayload,
      handleProtocols: (protocols) => [...protocols].find((p) => Object.hasOwn(acceptors, p)) ?? false,
    });
    this.wss.on('connection', (socket, request) => {
      const accept = Object.hasOwn(acceptors, socket.protocol) ? acceptors[socket.protocol] : undefined;
      if (!accept) {
        socket.close(1002, `the subprotocol must be one of ${Object.keys(acceptors).join(', ')}`);
        return;
      }
      accept(socket, request);
    });
    this.wss.on('error', (err) => logger.debug({ err: err.message }, 'WebSocket server error'));
  }

  /** Takes the upgrades of `server`; anything but `/$iothub/websocket` is refused with 404. */
  attach(server: Server, unused?: UnusedConnections): void {
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      unused?.used(request.socket as Socket);
      if (request.url?.split('?')[0] !== WEBSOCKET_PATH) {
        socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
        return;
      }
      socket.on('error', (err) => this.options.logger.debug({ err: err.message }, 'WebSocket upgrade failed'));
      this.wss.handleUpgrade(request, socket, head, (ws) => this.wss.emit('connection', ws, request));
    });
  }
}

export interface WebSocketListener {
  server: Server;
  /** Ends the connections that never upgraded (their protocols end the upgraded ones). */
  destroyUnused(): void;
}

/** A listener of its own for `--web-socket-port`: upgrades only; a plain request gets 426 (the path) or 404. */
export function createWebSocketListener(
  webSockets: DeviceWebSockets,
  options: { tls: TlsMaterial; logger: Logger; connectTimeoutMs: number },
): WebSocketListener {
  const { logger, connectTimeoutMs } = options;
  const server = createServer({
    cert: options.tls.cert,
    key: options.tls.key,
    ...CLIENT_CERTIFICATE_OPTIONS,
    minVersion: 'TLSv1.2',
    handshakeTimeout: connectTimeoutMs,
    headersTimeout: connectTimeoutMs,
    requestTimeout: connectTimeoutMs,
  });
  // Node leaves a socket whose handshake failed open when someone listens here.
  server.on('tlsClientError', (err, socket) => {
    logger.debug({ err: err.message }, 'TLS handshake failed (WebSocket port)');
    socket.destroy();
  });
  server.on('request', (request, response) => {
    const upgradeWanted = request.url?.split('?')[0] === WEBSOCKET_PATH;
    response.writeHead(upgradeWanted ? 426 : 404, upgradeWanted ? { upgrade: 'websocket', connection: 'Upgrade' } : {}).end();
  });
  const unused = new UnusedConnections(server);
  webSockets.attach(server, unused);
  return { server, destroyUnused: () => unused.destroy() };
}
