/**
 * One process's proxy: the request handling (GatewayProxy), its upstream pools,
 * and the client connections of both listeners. The gateway runs one in
 * its own process, or one in each worker process (worker-processes.ts), which then
 * get their connections from the listening process.
 */
import type { Socket } from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import type { Certificate } from '../config/model.ts';
import { readServerName } from '../http/client-hello.ts';
import type { Logger } from 'pino';
import { HttpParsers } from '../http/parser.ts';
import { Http1Server, type ConnectionCounters } from '../http/server.ts';
import { UpstreamPools } from '../http/upstream.ts';
import type { LoadedConfig } from '../proxy/compile.ts';
import { GatewayProxy } from '../proxy/proxy.ts';
import { ProxyTraffic } from '../proxy/traffic.ts';
import type { PluginSeries } from '../plugins/series.ts';

/** Largest request head (request line and headers), bytes: Node's default, which the gateway has always had. */
const MAX_HEADER_SIZE = 16 * 1024;

/** A proxy's settings from the gateway's options: the same in the gateway's process and in each worker, where they travel as they are. */
export interface ProxySettings {
  trustedIps: readonly string[];
  maxBodySize: number;
  /** ms a client may take to send a request head. */
  clientHeaderTimeout: number;
  /** ms an idle client connection stays open. */
  keepAliveTimeout: number;
  /** ms a client may take to finish the TLS handshake. */
  tlsHandshakeTimeout: number;
  tls: { cert: string; key: string };
}

export interface ProxyServiceOptions extends ProxySettings {
  /** The configuration in force (swapped by a reload). */
  config(): LoadedConfig;
  /** The HTTPS listener's port, for https_redirect_status_code redirects. */
  httpsPort(): number | null;
  logger: Logger;
  /** Where this process's plugins keep their own counters (PluginEnvironment.series). */
  series: PluginSeries;
}

export type Scheme = 'http' | 'https';

export class ProxyService {
  /** What this process's proxy has answered (the admin API's counts and last requests). */
  readonly traffic: ProxyTraffic;
  private readonly pools: UpstreamPools;
  private readonly plain: Http1Server;
  private readonly secure: Http1Server;
  private readonly tls: TlsServer;
  /** One TLS server per certificate entity of the configurations loaded (a reload's new entities get new ones). */
  private readonly certificateServers = new WeakMap<Certificate, TlsServer>();

  constructor(private readonly options: ProxyServiceOptions) {
    this.traffic = new ProxyTraffic(options.series);
    // One llhttp instance for both sides of every connection of this process's proxy.
    const parsers = new HttpParsers();
    this.pools = new UpstreamPools(parsers);
    const proxy = new GatewayProxy({
      config: options.config,
      pools: this.pools,
      trustedIps: options.trustedIps,
      maxBodySize: options.maxBodySize,
      httpsPort: options.httpsPort,
      logger: options.logger,
      traffic: this.traffic,
    });
    // Bodies may stream for long; slow heads are what a slowloris client abuses, so only heads are timed.
    const connections = {
      headersTimeout: options.clientHeaderTimeout,
      keepAliveTimeout: options.keepAliveTimeout,
      maxHeaderSize: MAX_HEADER_SIZE,
      parsers,
      onBadRequest: proxy.answerClientError,
    };
    this.plain = new Http1Server({ ...connections, onRequest: proxy.listener('http') });
    this.secure = new Http1Server({ ...connections, onRequest: proxy.listener('https') });
    // Never listens: it takes the HTTPS listener's connections and does the handshake. Until the
    // handshake is done the connection is not half-open: a client's FIN closes it, and so does
    // the handshake timeout (Node reports both as tlsClientError and leaves the socket open).
    this.tls = this.tlsServer(options.tls);
  }

  /** A TLS server (never listening) that handshakes with this certificate and hands the connection on. */
  private tlsServer(certificate: { cert: string | string[]; key: string | string[] }): TlsServer {
    const server = createTlsServer({ ...certificate, handshakeTimeout: this.options.tlsHandshakeTimeout }, (socket) => {
      socket.allowHalfOpen = true;
      this.secure.accept(socket);
    });
    server.on('tlsClientError', (_err, socket) => socket.destroy());
    return server;
  }

  /**
   * A TLS connection: with certificates configured (Kong's certificates and
   * snis), the client's server name is read first and the handshake done
   * with the certificate for it; else with the gateway's own.
   */
  private async handshake(socket: Socket): Promise<void> {
    const table = this.options.config().certificates;
    if (table.empty) return void this.tls.emit('connection', socket);
    const name = await readServerName(socket, this.options.tlsHandshakeTimeout);
    if (name === null) return;
    const certificate = name === undefined ? undefined : table.certificateFor(name);
    if (!certificate) return void this.tls.emit('connection', socket);
    let server = this.certificateServers.get(certificate);
    if (!server) {
      // cert_alt/key_alt: both pairs in one server, so the handshake offers the one the client can use.
      const alt = certificate.cert_alt !== null && certificate.key_alt !== null;
      server = this.tlsServer(alt ? { cert: [certificate.cert, certificate.cert_alt!], key: [certificate.key, certificate.key_alt!] } : certificate);
      this.certificateServers.set(certificate, server);
    }
    server.emit('connection', socket);
  }

  /** A client connection from one of the listeners: plain HTTP, or TLS to be handshaken here. */
  accept(socket: Socket, scheme: Scheme): void {
    if (scheme === 'http') {
      socket.allowHalfOpen = true;
      this.plain.accept(socket);
    } else void this.handshake(socket);
  }

  counters(): ConnectionCounters {
    const a = this.plain.counters;
    const b = this.secure.counters;
    return { accepted: a.accepted + b.accepted, active: a.active + b.active, inFlight: a.inFlight + b.inFlight, total: a.total + b.total };
  }

  /** Closes idle connections now and the others once their answer is complete. */
  async close(): Promise<void> {
    await Promise.all([this.plain.close(), this.secure.close()]);
    await this.pools.close();
  }
}
