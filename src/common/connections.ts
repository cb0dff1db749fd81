/**
 * Connections a server has accepted but that are not in use yet: no HTTP
 * request, no MQTT CONNECT. Node's server.close() waits for every open
 * connection, and one whose client never sends anything (a browser's
 * preconnect, a port scan, a TLS handshake that never finishes) would keep it
 * waiting, maybe for ever: destroy() ends them on close.
 *
 * Tracking starts when TCP accepts, so on a TLS server the connections still
 * in their handshake count too. The protocol marks a connection used with the
 * socket it sees (on a TLS server, the TLS socket over the accepted one); both
 * sockets have the same two ends, which is what a connection is known by here.
 */
import type { Server, Socket } from 'node:net';

export class UnusedConnections {
  private readonly sockets = new Map<string, Socket>();

  constructor(server: Server) {
    server.on('connection', (socket: Socket) => {
      const key = connectionKey(socket);
      this.sockets.set(key, socket);
      socket.once('close', () => {
        if (this.sockets.get(key) === socket) this.sockets.delete(key);
      });
    });
  }

  /** The connection carries a request now: its protocol ends it on close. */
  used(socket: Socket): void {
    // Called for every request: with no connection waiting (the usual case under load) there is nothing to look up.
    if (this.sockets.size > 0) this.sockets.delete(connectionKey(socket));
  }

  /** Ends every connection not marked used. */
  destroy(): void {
    for (const socket of this.sockets.values()) socket.destroy();
  }
}

function connectionKey(socket: Socket): string {
  return `${socket.remoteAddress} ${socket.remotePort} ${socket.localAddress} ${socket.localPort}`;
}
