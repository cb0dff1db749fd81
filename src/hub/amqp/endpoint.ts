/**
 * AMQP 1.0 on rhea: over TLS on 5671 and over WebSockets (subprotocol
 * `AMQPWSB10`, handed over by ../websocket.ts), as the device SDKs' Amqp and
 * AmqpWs transports and the service SDK's Client speak it. Authentication is
 * claims-based, as on the real hub: a client puts a SAS token on the `$cbs`
 * node for an audience (a device, a module, or the hub for the service side)
 * and may then attach the links that audience covers; a device with an X.509
 * certificate puts no token, its TLS client certificate proves it when it
 * attaches its first link. Each link is a thin
 * adapter over the domain (device.ts, service.ts).
 */
import type { Server as TlsServer, TLSSocket } from 'node:tls';
import rhea, { type Connection, type EventContext, type Message, type Sender } from 'rhea';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import { formatHost } from '../../common/http.ts';
import { CLIENT_CERTIFICATE_OPTIONS, type TlsMaterial } from '../../common/tls.ts';
import { ConnectRefused, ServiceRefused, type DeviceHub } from '../domain/hub.ts';
import { HubError } from '../domain/errors.ts';
import { identityKey, parseIdentityKey, type Identity } from '../domain/registry.ts';
import { hostWithoutPort } from '../domain/sas.ts';
import { amqpCondition } from '../errors.ts';
import { listening } from '../listen.ts';
import type { WebSocketAcceptor } from '../websocket.ts';
import { presentedChain } from '../client-certificate.ts';
import type { PresentedChain } from '../domain/x509.ts';
import type { IncomingMessage } from 'node:http';
import { DeviceLinks } from './device.ts';
import { ServiceLinks } from './service.ts';

export interface AmqpEndpointOptions {
  host: string;
  port: number;
  tls: TlsMaterial;
  logger: Logger;
  connectTimeoutMs: number;
}

export interface AmqpEndpoint {
  url: string;
  port: number;
  acceptWebSocket: WebSocketAcceptor;
  close(): Promise<void>;
}

/** What one AMQP connection has proven on `$cbs` or by its client certificate, and the `$cbs` link its answers go back on. */
export class AmqpClient {
  /** Device and module keys this connection holds a valid token for, or proved by its certificate. */
  readonly identities = new Map<string, Identity>();
  service = false;
  cbsReplies: Sender | undefined;
  /** Identities whose X.509 check this connection has started (each is checked once). */
  readonly certificateChecked = new Set<string>();
  /** The tail of the X.509 checks under way; the connection's link and message events wait behind it. */
  private checks: Promise<void> | undefined;

  constructor(
    readonly connection: Connection,
    /** The certificate chain of its TLS handshake, when it sent one (X.509 devices, which put no token). */
    readonly certificate: PresentedChain | undefined,
  ) {}

  /** Runs `handle` now, or, while an X.509 check is under way, after it, in the order the events came. */
  inOrder(handle: () => unknown): void {
    if (this.checks) this.after(handle);
    else handle();
  }

  after(task: () => unknown): void {
    const tail = (this.checks ?? Promise.resolve()).then(task).then(() => undefined);
    this.checks = tail;
    void tail.then(() => {
      if (this.checks === tail) this.checks = undefined;
    });
  }
}

/** The connection option that carries, over WebSockets, the client certificate of the upgraded request. */
const CLIENT_CERTIFICATE = 'offcloud_client_certificate';

const CBS = '$cbs';
/** The largest frame a client may send (what the hub offers in its open). */
export const AMQP_MAX_FRAME_BYTES = 64 * 1024;

/** `/devices/{id}[/modules/{mid}]/<rest>` → the identity and the rest (`messages/events`, `twin`…). */
export function deviceAddress(address: string): { identity: Identity; rest: string } | undefined {
  const match = /^\/devices\/([^/]+)(?:\/modules\/([^/]+))?\/(.+)$/.exec(address);
  if (!match) return undefined;
  let key: string;
  try {
    key = match[2] ? `${decodeURIComponent(match[1]!)}/${decodeURIComponent(match[2])}` : decodeURIComponent(match[1]!);
  } catch {
    return undefined;
  }
  const identity = parseIdentityKey(key);
  return identity ? { identity, rest: match[3]! } : undefined;
}

function decodedAudience(name: string): string {
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

export function addressOf(terminus: unknown): string {
  const address = (terminus as { address?: unknown } | undefined)?.address;
  return typeof address === 'string' ? address : '';
}

/** Closes a link with an AMQP error the SDKs translate (`amqp:unauthorized-access`, `amqp:not-found`…). */
export function refuseLink(link: { close(error?: { condition: string; description: string }): void }, err: unknown): void {
  link.close(amqpCondition(err));
}

export async function startAmqpEndpoint(hub: DeviceHub, options: AmqpEndpointOptions): Promise<AmqpEndpoint> {
  const { logger } = options;
  const container = rhea.create_container({ id: `offcloud-hub-${hub.settings.replicaId}` });
  const clients = new WeakMap<Connection, AmqpClient>();
  const open = new Set<Connection>();
  const devices = new DeviceLinks(hub, logger);
  const service = new ServiceLinks(hub, logger);
  hub.onEvent((event) => devices.onHubEvent(event));

  const clientOf = (connection: Connection): AmqpClient => {
    let client = clients.get(connection);
    if (!client) {
      const overWebSocket = (connection.options as unknown as Record<string, unknown>)[CLIENT_CERTIFICATE] as PresentedChain | undefined;
      client = new AmqpClient(connection, overWebSocket ?? presentedChain((connection as unknown as { socket?: unknown }).socket));
      clients.set(connection, client);
      open.add(connection);
    }
    return client;
  };

  /** A put-token on `$cbs`: checks the token for its audience and answers with a status code. */
  const putToken = async (client: AmqpClient, message: Message): Promise<{ status: number; description: string }> => {
    const properties = (message.application_properties ?? {}) as Record<string, unknown>;
    if (properties.operation !== 'put-token') return { status: 400, description: 'only put-token is supported' };
    // The SDKs send the token's `sr` as it is, URL-encoded.
    const audience = decodedAudience(String(properties.name ?? ''));
    const token = Buffer.isBuffer(message.body) ? message.body.toString('utf8') : String(message.body ?? '');
    try {
      const slash = audience.indexOf('/');
      const host = slash < 0 ? audience : audience.slice(0, slash);
      if (hostWithoutPort(host) !== hostWithoutPort(hub.settings.hostName)) throw new ConnectRefused(`the audience ${audience} is not this hub`);
      if (slash < 0) {
        await hub.authenticateService(token, 'serviceConnect');
        client.service = true;
      } else {
        const target = deviceAddress(`${audience.slice(slash)}/x`);
        if (!target) throw new ConnectRefused(`the audience ${audience} is not a device or module`);
        await hub.verifyDeviceToken(target.identity, token);
        const key = identityKey(target.identity);
        const first = !client.identities.has(key);
        client.identities.set(key, target.identity);
        if (first) await devices.connected(client, target.identity);
      }
      return { status: 200, description: 'OK' };
    } catch (err) {
      if (err instanceof ConnectRefused || err instanceof ServiceRefused) {
        logger.info({ audience: audience.slice(0, 256), reason: err instanceof ServiceRefused ? err.reason : err.message }, 'AMQP put-token refused');
        return { status: 401, description: 'Unauthorized' };
      }
      if (err instanceof HubError) return { status: err.status, description: err.message };
      logger.error({ err }, 'AMQP put-token failed');
      return { status: 500, description: 'internal error' };
    }
  };

  /**
   * X.509: a connection that sent a client certificate and attaches a link of a device it has not
   * proven yet is checked for that device (once); its events wait until the check is done, and a
   * refused check leaves the device unproven (its links are refused as without a token).
   */
  const checkCertificateFor = (client: AmqpClient, address: string): void => {
    const target = client.certificate && deviceAddress(address);
    if (!target) return;
    const key = identityKey(target.identity);
    if (client.identities.has(key) || client.certificateChecked.has(key)) return;
    client.certificateChecked.add(key);
    client.after(async () => {
      try {
        await hub.verifyDeviceCertificate(target.identity, client.certificate!);
        client.identities.set(key, target.identity);
        await devices.connected(client, target.identity);
      } catch (err) {
        if (err instanceof ConnectRefused) logger.info({ key, reason: err.message }, 'AMQP client certificate refused');
        else logger.error({ err }, 'AMQP client certificate check failed');
      }
    });
  };

  container.on('connection_open', (context: EventContext) => {
    clientOf(context.connection);
  });
  container.on('sender_open', (context: EventContext) => {
    const sender = context.sender!;
    const client = clientOf(context.connection);
    const address = addressOf(sender.source);
    sender.set_source({ address });
    if (address === CBS) {
      client.cbsReplies = sender;
      return;
    }
    checkCertificateFor(client, address);
    client.inOrder(() => {
      if (!devices.senderOpened(client, sender, address) && !service.senderOpened(client, sender, address)) {
        refuseLink(sender, new HubError('DeviceNotFound', `no node ${address.slice(0, 256)}`));
      }
    });
  });
  container.on('receiver_open', (context: EventContext) => {
    const receiver = context.receiver!;
    const client = clientOf(context.connection);
    const address = addressOf(receiver.target);
    receiver.set_target({ address });
    if (address === CBS) return;
    checkCertificateFor(client, address);
    client.inOrder(() => {
      if (!devices.receiverOpened(client, receiver, address) && !service.receiverOpened(client, receiver, address)) {
        refuseLink(receiver, new HubError('DeviceNotFound', `no node ${address.slice(0, 256)}`));
      }
    });
  });
  container.on('message', (context: EventContext) => {
    const client = clientOf(context.connection);
    const receiver = context.receiver!;
    const delivery = context.delivery!;
    const message = context.message!;
    const address = addressOf(receiver.target);
    if (address !== CBS) {
      client.inOrder(() => devices.onMessage(client, receiver, delivery, message, address) || service.onMessage(client, delivery, message, address));
      return;
    }
    void putToken(client, message).then(({ status, description }) => {
      delivery.accept();
      client.cbsReplies?.send({
        body: undefined,
        correlation_id: message.message_id,
        to: message.reply_to,
        application_properties: { 'status-code': status, 'status-description': description },
      } as Message);
    });
  });
  for (const outcome of ['accepted', 'rejected', 'released'] as const) {
    container.on(outcome, (context: EventContext) => {
      devices.onSettled(context.delivery!, outcome);
      service.onSettled(context.delivery!, outcome);
    });
  }
  container.on('sendable', (context: EventContext) => {
    devices.onSendable(context.sender!);
    service.onSendable(context.sender!);
  });
  const gone = (context: EventContext) => {
    const client = clients.get(context.connection);
    open.delete(context.connection);
    if (!client) return;
    devices.disconnected(client);
    service.disconnected(client);
  };
  container.on('disconnected', gone);
  container.on('connection_close', gone);
  for (const event of ['sender_close', 'receiver_close'] as const) {
    container.on(event, (context: EventContext) => {
      const client = clients.get(context.connection);
      const link = context.sender ?? context.receiver;
      if (client && link) {
        devices.linkClosed(client, link);
        service.linkClosed(link);
      }
    });
  }
  // Errors of one client's connection are that client's; they are logged and the hub goes on.
  container.on('error', (err: unknown) => logger.debug({ err: (err as Error).message }, 'AMQP error'));
  for (const event of ['connection_error', 'session_error', 'sender_error', 'receiver_error'] as const) {
    container.on(event, (context: EventContext) => logger.debug({ event, err: String(context.error ?? '') }, 'AMQP error'));
  }

  // Receivers settle each message once the hub has taken it (not on arrival); a connection
  // silent for 4 minutes is closed (the real hub's idle timeout).
  const connectionOptions = { autoaccept: false, idle_time_out: 240_000, max_frame_size: AMQP_MAX_FRAME_BYTES };
  const server = container.listen({
    transport: 'tls',
    port: options.port,
    host: options.host,
    cert: options.tls.cert,
    key: options.tls.key,
    ...CLIENT_CERTIFICATE_OPTIONS,
    minVersion: 'TLSv1.2',
    handshakeTimeout: options.connectTimeoutMs,
    ...connectionOptions,
  } as Parameters<typeof container.listen>[0]) as TlsServer;
  server.on('tlsClientError', (err, socket: TLSSocket) => {
    logger.debug({ err: err.message }, 'TLS handshake failed (AMQP port)');
    socket.destroy();
  });
  // container.listen has told the server to listen; this waits for it, or names the option whose port is taken.
  const port = await listening(server, options.host, options.port, 'amqpPort');
  return {
    url: `amqps://${formatHost(options.host)}:${port}`,
    port,
    acceptWebSocket(socket: WebSocket, request: IncomingMessage) {
      const certificate = presentedChain(request.socket);
      container.websocket_accept(
        socket as unknown as Parameters<typeof container.websocket_accept>[0],
        { ...connectionOptions, ...(certificate ? { [CLIENT_CERTIFICATE]: certificate } : {}) } as never,
      );
    },
    async close() {
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const connection of open) {
        const client = clients.get(connection);
        if (client) devices.disconnected(client);
        connection.close();
        (connection as unknown as { socket?: { destroy?: () => void; end?: () => void } }).socket?.destroy?.();
      }
      open.clear();
      await devices.flush();
      await stopped;
    },
  };
}
