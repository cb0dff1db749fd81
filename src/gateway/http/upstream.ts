/**
 * Talking to upstream services: a keep-alive pool of sockets per service
 * origin, requests written as HTTP/1.1 and answers framed by MessageParser,
 * Kong's per-phase timeouts, `retries` extra tries when a connection fails
 * before any of the answer came, bodies streamed both ways with
 * backpressure.
 */
import { isIP, connect as netConnect, type Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { clientBodyError, GatewayError, MESSAGES } from '../errors.ts';
import { headerLines, LAST_CHUNK, writeChunk, writeHeadAndBody } from './server.ts';
import type { AnswerSink } from '../proxy/whole-answer.ts';
import { MessageParser, type HttpParsers, type MessageEvents, type MessageHead } from './parser.ts';
import type { Service } from '../config/model.ts';

export interface ForwardRequest {
  service: Service;
  /**
   * For a service balanced over an upstream's targets: the target of the
   * first try, and of each try after a counted one failed, as a
   * service-like object with the target's host and port. Retries and
   * timeouts stay `service`'s.
   */
  peer?: (() => Service) | undefined;
  method: string;
  /** Path and query, as the upstream gets them. */
  path: string;
  headers: Record<string, string | string[]>;
  /** A buffered body, the client's body stream, or none. */
  body: Buffer | Readable | null;
  /** Largest body streamed through (bytes, 0 = no limit). */
  maxBodySize: number;
  /** Called once with the upstream's status and headers (name/value pairs as received), before its body is written to `client`. */
  onResponse(status: number, rawHeaders: readonly string[]): void;
  /** The client's answer: the upstream's body goes there, and when it closes early the upstream request is dropped. */
  client: AnswerSink;
}

/** A failure of the upstream side, by code: Node's socket errors or the gateway's own. */
class UpstreamError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'UpstreamError';
  }
}

/** Errors that mean "no connection was made", so no byte reached the upstream and a retry is safe. */
const CONNECT_FAILURES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'CONNECT_TIMEOUT']);
/** Errors before any response byte; safe to retry while no byte of a streamed body was sent. */
const EARLY_RESETS = new Set(['ECONNRESET', 'EPIPE', 'CLOSED']);
const TIMEOUTS = new Set(['CONNECT_TIMEOUT', 'READ_TIMEOUT', 'WRITE_TIMEOUT']);
const NAME_FAILURES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL']);

/** Largest upstream answer head (nginx refuses heads over its proxy_buffer_size with 502 too). */
const MAX_RESPONSE_HEAD = 64 * 1024;
/** Idle upstream connections kept per origin (Kong's upstream_keepalive_pool_size) and for how long. */
const MAX_IDLE = 512;
const IDLE_MS = 60_000;

function errorCode(err: unknown): string {
  return (err as { code?: string }).code ?? '';
}

/** How one try ended, when it did not succeed. */
interface Failure {
  error: unknown;
  /** The answer had begun: nothing can be tried again. */
  responded: boolean;
  /** Bytes of a streamed body went out: that body cannot be sent again. */
  bodyStarted: boolean;
}

/** One request on one connection. */
class Exchange {
  private responded = false;
  private bodyStarted = false;
  private requestSent = false;
  private interim = false;
  private keepAlive = false;
  private done = false;
  private writeTimer: NodeJS.Timeout | null = null;
  private waitingForClient = false;
  private detachBody: (() => void) | null = null;

  constructor(
    private readonly connection: UpstreamConnection,
    private readonly request: ForwardRequest,
    private readonly settle: (failure: Failure | null) => void,
  ) {}

  start(): void {
    const { request } = this;
    const { socket } = this.connection;
    request.client.abortHandler = this;
    const body = request.body;
    const streamed = body !== null && !Buffer.isBuffer(body);
    const chunked = streamed && request.headers['content-length'] === undefined;
    let head = `${request.method} ${request.path} HTTP/1.1\r\n${headerLines(request.headers)}`;
    if (chunked) head += 'Transfer-Encoding: chunked\r\n';
    const written = Buffer.isBuffer(body) ? writeHeadAndBody(socket, head + '\r\n', body) : socket.write(head + '\r\n', 'latin1');
    if (!written) this.awaitDrain();
    if (streamed) this.pump(body, chunked);
    else this.sent();
  }

  /** Streams the client's body, counting it against the limit and pausing while the upstream is full. */
  private pump(body: Readable, chunked: boolean): void {
    const { socket } = this.connection;
    // The client's body already failed (bad chunking, the client left) before the upstream was reached.
    if (body.errored) return this.fail(clientBodyError(body.errored));
    let total = 0;
    const onData = (chunk: Buffer) => {
      total += chunk.length;
      if (this.request.maxBodySize && total > this.request.maxBodySize) return this.fail(new GatewayError(413, MESSAGES.payloadTooLarge));
      this.bodyStarted = true;
      const ok = chunked ? writeChunk(socket, chunk) : socket.write(chunk);
      if (!ok) {
        body.pause();
        this.awaitDrain(() => body.resume());
      }
    };
    const onEnd = () => {
      if (chunked) socket.write(LAST_CHUNK, 'latin1');
      this.sent();
    };
    const onError = (err: Error) => this.fail(clientBodyError(err));
    body.on('data', onData);
    body.once('end', onEnd);
    body.once('error', onError);
    this.detachBody = () => {
      body.removeListener('data', onData);
      body.removeListener('end', onEnd);
      body.removeListener('error', onError);
      body.pause();
    };
  }

  /** Kong's write_timeout: the upstream must take more of the request within it. */
  private awaitDrain(then?: () => void): void {
    const service = this.request.service;
    this.writeTimer ??= setTimeout(() => this.fail(new UpstreamError('WRITE_TIMEOUT', 'upstream write timed out')), service.write_timeout);
    this.connection.socket.once('drain', () => {
      if (this.writeTimer) clearTimeout(this.writeTimer);
      this.writeTimer = null;
      if (!this.done) then?.();
    });
  }

  /** The whole request is out: Kong's read_timeout runs between two reads from here on. */
  private sent(): void {
    this.requestSent = true;
    if (!this.done) this.connection.awaitRead(this.request.service.read_timeout);
  }

  /** The answer is awaited (the connection's read timer counts for this exchange only then). */
  awaitingAnswer(): boolean {
    return this.requestSent && !this.done;
  }

  /** The client went away: the upstream request is dropped. */
  clientGone(): void {
    this.fail(new UpstreamError('CLIENT_GONE', 'the client went away'));
  }

  onHead(head: MessageHead): boolean {
    // 1xx interim answers (103 Early Hints, a 100 the upstream sent anyway) are not the answer.
    if (head.statusCode < 200) {
      if (head.statusCode === 101) throw new UpstreamError('BAD_RESPONSE', 'unexpected protocol switch');
      this.interim = true;
      return false;
    }
    this.responded = true;
    this.keepAlive = head.keepAlive;
    this.request.onResponse(head.statusCode, head.rawHeaders);
    return this.request.method === 'HEAD';
  }

  onBody(chunk: Buffer): void {
    const { client } = this.request;
    if (client.write(chunk) || this.waitingForClient) return;
    this.waitingForClient = true;
    const { socket } = this.connection;
    socket.pause();
    client.onceDrained(() => {
      this.waitingForClient = false;
      if (!this.done) socket.resume();
    });
  }

  onComplete(): void {
    if (this.interim) {
      this.interim = false;
      return;
    }
    if (this.done) return;
    this.finish();
    this.request.client.end();
    // A connection whose request was not wholly sent (the upstream answered early) cannot carry another.
    if (this.keepAlive && this.requestSent && !this.waitingForClient) this.connection.release();
    else this.connection.socket.destroy();
    this.settle(null);
  }

  /** The upstream closed its side; an answer read to EOF ends here. */
  closed(lastError: Error | null): void {
    if (this.done) return;
    const ended = this.responded ? this.connection.parser.finish() : null;
    if (this.done) return;
    this.fail(ended ?? lastError ?? new UpstreamError('CLOSED', 'the upstream closed the connection'));
  }

  fail(error: unknown): void {
    if (this.done) return;
    this.finish();
    this.connection.socket.destroy();
    this.settle({ error, responded: this.responded, bodyStarted: this.bodyStarted });
  }

  private finish(): void {
    this.done = true;
    if (this.writeTimer) clearTimeout(this.writeTimer);
    this.detachBody?.();
    this.request.client.abortHandler = null;
    this.connection.exchange = null;
  }
}

/**
 * Where plain-TCP upstream sockets read into (net's `onread`): one buffer
 * for all of them, as each read is parsed before the next one happens. It
 * spares a Buffer and a stream event per read; body bytes leave it only as
 * copies (UpstreamConnection.onBody).
 */
const READ_BUFFER = Buffer.alloc(64 * 1024);

class UpstreamConnection implements MessageEvents {
  readonly parser: MessageParser;
  exchange: Exchange | null = null;
  idleSince = 0;
  private lastError: Error | null = null;
  /**
   * Kong's read_timeout, one timer per connection for all its exchanges:
   * refreshed when a request is out and after each read, never cleared
   * between exchanges (one that fires while no answer is awaited does
   * nothing). Creating and clearing a timer per request cost more.
   */
  private readTimer: NodeJS.Timeout | null = null;
  private readTimeout = 0;
  constructor(
    readonly socket: Socket,
    private readonly pool: OriginPool,
    /** The socket reads into READ_BUFFER (a TLS socket emits its own chunks): body bytes must be copied out. */
    private readonly sharedBuffer: boolean,
  ) {
    this.parser = new MessageParser(pool.parsers, 'response', this, MAX_RESPONSE_HEAD);
    socket.setNoDelay(true);
    if (!this.sharedBuffer) socket.on('data', (chunk: Buffer) => this.received(chunk, chunk.length));
    socket.on('error', (err) => (this.lastError = err));
    socket.on('close', () => {
      if (this.readTimer) clearTimeout(this.readTimer);
      this.pool.forget(this);
      this.exchange?.closed(this.lastError);
      this.parser.close();
    });
  }

  /** Bytes from the upstream: `length` of them at the start of `chunk`. Always true (net's `onread` would stop reading on false). */
  received(chunk: Buffer, length: number): true {
    const exchange = this.exchange;
    // Bytes nobody asked for: the connection is out of step.
    if (!exchange) {
      this.socket.destroy();
      return true;
    }
    const error = this.parser.execute(chunk, length);
    if (error) {
      if (this.exchange) this.exchange.fail(new UpstreamError('BAD_RESPONSE', error.message));
      else this.socket.destroy();
    } else if (this.exchange === exchange && exchange.awaitingAnswer()) this.readTimer?.refresh();
    return true;
  }

  /** The request is out: the upstream has `timeout` ms for each read from now on. */
  awaitRead(timeout: number): void {
    if (this.readTimer && this.readTimeout === timeout) {
      this.readTimer.refresh();
      return;
    }
    if (this.readTimer) clearTimeout(this.readTimer);
    this.readTimeout = timeout;
    this.readTimer = setTimeout(() => {
      if (this.exchange?.awaitingAnswer()) this.exchange.fail(new UpstreamError('READ_TIMEOUT', 'upstream read timed out'));
    }, timeout);
    // An idle pooled connection's timer keeps nothing alive; an exchange in flight has its socket for that.
    this.readTimer.unref();
  }

  onHead(head: MessageHead): boolean {
    if (!this.exchange) throw new UpstreamError('BAD_RESPONSE', 'an answer to no request');
    return this.exchange.onHead(head);
  }

  onBody(chunk: Buffer): void {
    this.exchange?.onBody(this.sharedBuffer ? Buffer.from(chunk) : chunk);
  }

  onComplete(): void {
    this.exchange?.onComplete();
  }

  /** Runs one request; resolves with null on success, else how it failed. */
  send(request: ForwardRequest): Promise<Failure | null> {
    return new Promise((settle) => {
      const exchange = new Exchange(this, request, settle);
      this.exchange = exchange;
      exchange.start();
    });
  }

  release(): void {
    this.pool.release(this);
  }
}

/** The keep-alive connections to one origin. */
class OriginPool {
  private readonly idle: UpstreamConnection[] = [];
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly service: Service,
    readonly parsers: HttpParsers,
  ) {
    this.sweeper = setInterval(() => {
      const now = Date.now();
      for (const connection of this.idle) if (now - connection.idleSince > IDLE_MS) connection.socket.destroy();
    }, IDLE_MS / 4);
    this.sweeper.unref();
  }

  /** An idle connection, most recently used first (the likeliest still open). */
  take(): UpstreamConnection | null {
    for (let connection = this.idle.pop(); connection; connection = this.idle.pop()) {
      if (!connection.socket.destroyed) return connection;
    }
    return null;
  }

  connect(): Promise<UpstreamConnection> {
    const { protocol, host, port, connect_timeout: timeout, tls_verify: verify } = this.service;
    return new Promise((resolve, reject) => {
      const tls = protocol === 'https';
      let connection: UpstreamConnection | null = null;
      const socket = tls
        ? tlsConnect({ host, port, servername: isIP(host) ? undefined : host, rejectUnauthorized: verify ?? false })
        : netConnect({ host, port, onread: { buffer: READ_BUFFER, callback: (length) => connection!.received(READ_BUFFER, length) } });
      const timer = setTimeout(() => socket.destroy(new UpstreamError('CONNECT_TIMEOUT', 'upstream connect timed out')), timeout);
      const onError = (err: Error) => {
        clearTimeout(timer);
        reject(err);
      };
      socket.once('error', onError);
      socket.once(protocol === 'https' ? 'secureConnect' : 'connect', () => {
        clearTimeout(timer);
        socket.removeListener('error', onError);
        connection = new UpstreamConnection(socket, this, !tls);
        resolve(connection);
      });
    });
  }

  release(connection: UpstreamConnection): void {
    if (this.closed || this.idle.length >= MAX_IDLE) return void connection.socket.destroy();
    connection.idleSince = Date.now();
    this.idle.push(connection);
  }

  forget(connection: UpstreamConnection): void {
    const at = this.idle.indexOf(connection);
    if (at >= 0) this.idle.splice(at, 1);
  }

  close(): void {
    this.closed = true;
    clearInterval(this.sweeper);
    for (const connection of this.idle.splice(0)) connection.socket.destroy();
  }
}

export class UpstreamPools {
  constructor(private readonly parsers: HttpParsers) {}

  private readonly pools = new Map<string, OriginPool>();
  /** Each loaded service object remembers its pool, so the hot path builds no key. */
  private readonly byService = new WeakMap<Service, OriginPool>();

  private poolFor(service: Service): OriginPool {
    const known = this.byService.get(service);
    if (known) return known;
    const key = `${service.protocol}|${service.host}|${service.port}|${service.connect_timeout}|${service.tls_verify ?? false}`;
    let pool = this.pools.get(key);
    if (!pool) {
      pool = new OriginPool(service, this.parsers);
      this.pools.set(key, pool);
    }
    this.byService.set(service, pool);
    return pool;
  }

  /**
   * Sends the request, trying again up to `retries` times when the
   * connection fails before any of the answer came. Failures before the
   * answer began become Kong's 502/503/504; later ones cut the client's
   * connection (the caller sees the error with the head already sent).
   */
  forward(request: ForwardRequest): Promise<void> {
    const pool = this.poolFor(request.peer ? request.peer() : request.service);
    // The common case, a kept-alive connection ready, goes without an async function's frame.
    const connection = request.client.destroyed ? null : pool.take();
    if (!connection) return this.tryFrom(request, pool, undefined);
    return connection.send(request).then((failure) => {
      if (!failure) return;
      // A kept-alive connection the upstream had closed meanwhile is no fault of the upstream's: not a try.
      return this.tryFrom(request, pool, retryable(failure, request));
    });
  }

  /** The tries, up to the service's retries (`lastError`: how a kept-alive connection failed first, if it did). */
  private async tryFrom(request: ForwardRequest, pool: OriginPool, lastError: unknown): Promise<void> {
    let attempt = 0;
    while (attempt <= request.service.retries) {
      if (request.client.destroyed) throw new UpstreamError('CLIENT_GONE', 'the client went away');
      let connection = pool.take();
      const reused = connection !== null;
      if (!connection) {
        try {
          connection = await pool.connect();
        } catch (err) {
          lastError = err;
          attempt++;
          // Nothing was sent on a connection that failed while opening (a reset right after the handshake too).
          if (!CONNECT_FAILURES.has(errorCode(err)) && !EARLY_RESETS.has(errorCode(err))) break;
          pool = this.poolAfterFailedTry(request, attempt, pool);
          continue;
        }
      }
      const failure = await connection.send(request);
      if (!failure) return;
      lastError = retryable(failure, request);
      if (!reused) pool = this.poolAfterFailedTry(request, ++attempt, pool);
    }
    throw upstreamFailure(lastError);
  }

  /** A counted try failed: a balanced service moves to its next target (Kong's next peer) while tries remain. */
  private poolAfterFailedTry(request: ForwardRequest, attempt: number, pool: OriginPool): OriginPool {
    return request.peer && attempt <= request.service.retries ? this.poolFor(request.peer()) : pool;
  }

  async close(): Promise<void> {
    for (const pool of this.pools.values()) pool.close();
    this.pools.clear();
  }
}

/**
 * A failed try's error when another try may follow; throws what the client
 * gets otherwise: the error itself once the answer began (or the client
 * left, or the gateway refused), Kong's 502/504 when it cannot be retried.
 */
function retryable(failure: Failure, request: ForwardRequest): unknown {
  const { error } = failure;
  if (failure.responded || error instanceof GatewayError || request.client.destroyed) throw error;
  const code = errorCode(error);
  // A streamed body that has begun cannot be sent again.
  if (failure.bodyStarted || !(CONNECT_FAILURES.has(code) || EARLY_RESETS.has(code))) throw upstreamFailure(error);
  return error;
}

/** Kong's answer for an upstream that could not be used. */
function upstreamFailure(err: unknown): GatewayError {
  const code = errorCode(err);
  if (NAME_FAILURES.has(code)) return new GatewayError(503, MESSAGES.nameResolution);
  if (TIMEOUTS.has(code)) return new GatewayError(504, MESSAGES.timeout);
  return new GatewayError(502, MESSAGES.badGateway);
}
