/**
 * CONNECT and its end: the SAS check of §5, or X.509 for a device that sends
 * no password but a client certificate (CONNACK 5 on refusal), then
 * presence once the connection is ready, and the identity marked offline when
 * it goes.
 */
import type { AedesOptions, AuthenticateError, Client } from 'aedes';
import { ConnectRefused } from '../domain/hub.ts';
import { presentedChain } from '../client-certificate.ts';
import { sendC2d } from './c2d.ts';
import { DeviceSession, type EndpointContext } from './session.ts';

function notAuthorized(): AuthenticateError {
  return Object.assign(new Error('not authorized'), { returnCode: 5 as const });
}

export function connectHandlers({ hub, sessions, logger }: EndpointContext): Pick<AedesOptions, 'preConnect' | 'authenticate'> {
  const keepSessionWanted = new WeakMap<Client, boolean>();
  return {
    // Our own C2D queue holds messages between connections, so aedes keeps no session state.
    preConnect(client, packet, callback) {
      keepSessionWanted.set(client, !packet.clean);
      packet.clean = true;
      callback(null, true);
    },
    authenticate(client, username, password, callback) {
      // Over WebSockets the TLS socket is the upgraded request's.
      const certificate = password === undefined ? presentedChain(client.req?.socket ?? client.conn) : undefined;
      hub.authenticateDevice(client.id, username, password, certificate).then(
        (connection) => {
          const session = new DeviceSession(client, connection, keepSessionWanted.get(client) ?? false);
          if (!connection.identity.moduleId) session.c2d = hub.c2dDelivery(connection.identity.deviceId, (message) => sendC2d(session, message));
          sessions.accepted(session);
          callback(null, true);
        },
        (err: unknown) => {
          if (err instanceof ConnectRefused) logger.info({ clientId: client.id.slice(0, 256), reason: err.message }, 'device connection refused');
          else logger.error({ err }, 'device authentication failed');
          callback(notAuthorized(), null);
        },
      );
    },
  };
}

/** CONNACK sent: this connection is the identity's one; a kept C2D subscription resumes. */
export function onClientReady({ hub, sessions, logger }: EndpointContext, client: Client): void {
  const session = sessions.of(client);
  if (!session) return;
  sessions.setOnline(session);
  hub.deviceConnected(session.connection, session.connectionId, session.keepSession).then(
    async (resumeC2d) => {
      if (!resumeC2d || !session.c2d) return;
      session.subscriptions.add('c2d');
      await session.c2d.subscribe();
    },
    (err: unknown) => logger.error({ err, key: session.key }, 'connection bookkeeping failed'),
  );
}

export function onClientDisconnect({ hub, sessions, logger }: EndpointContext, client: Client): void {
  const session = sessions.of(client);
  if (!session) return;
  session.closed = true;
  session.c2d?.close();
  if (sessions.setOffline(session)) {
    hub.deviceDisconnected(session.key, session.connectionId).catch((err: unknown) => logger.error({ err }, 'presence update failed'));
  }
}
