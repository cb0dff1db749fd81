/**
 * The proxy's client-facing HTTP/1.1 on plain sockets (net or tls): requests
 * framed by MessageParser and answered one at a time per connection
 * (pipelined ones wait their turn), request bodies as streams with
 * backpressure, answers framed by Content-Length or chunked encoding,
 * keep-alive, and the header and idle timeouts. node:http does all of this
 * too, but its per-request objects alone cost more CPU than nginx spends on
 * a whole proxied request (bench/gateway/RESULTS.md).
 */
import { STATUS_CODES, type IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { MessageParser, ParseError, type HttpParsers, type MessageEvents, type MessageHead } from './parser.ts';

export type OutgoingHeaders = Record<string, string | string[] | number | undefined>;

export interface Http1Options {
  /** ms a client may take to send a request head. */
  headersTimeout: number;
  /** ms an idle keep-alive connection stays open. */
  keepAliveTimeout: number;
  /** Largest request head, bytes (request line and headers). */
  maxHeaderSize: number;
  /** The llhttp instance this server's connections parse with. */
  parsers: HttpParsers;
  onRequest(req: DownstreamRequest, res: DownstreamResponse): void;
  /** Answers what could not be parsed (or a head that timed out) on the socket, which then closes. */
  onBadRequest(err: ParseError, socket: Socket): void;
}

/** What the admin API's /status reports, nginx's stub_status figures. */
export interface ConnectionCounters {
  accepted: number;
  active: number;
  inFlight: number;
  total: number;
}

/** Bodies up to this size go out in one write with their head. */
const SMALL_BODY = 16 * 1024;

/** `Name: value` lines of a head; arrays give one line per value. */
export function headerLines(headers: OutgoingHeaders): string {
  let lines = '';
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) lines += headerLine(name, v);
    else lines += headerLine(name, String(value));
  }
  return lines;
}

/** Writes body bytes on a socket in chunked framing (one write under cork); false when the socket is full. */
export function writeChunk(socket: Socket, data: Buffer): boolean {
  socket.cork();
  socket.write(`${data.length.toString(16)}\r\n`, 'latin1');
  socket.write(data);
  const ok = socket.write('\r\n', 'latin1');
  socket.uncork();
  return ok;
}

/**
 * A head and the first body bytes: small bodies in one string write (latin1
 * carries bytes unchanged; one system call, no writev bookkeeping), larger
 * ones in two writes under cork.
 */
export function writeHeadAndBody(socket: Socket, head: string, body: Buffer): boolean {
  if (body.length <= SMALL_BODY) return socket.write(head + body.toString('latin1'), 'latin1');
  socket.cork();
  socket.write(head, 'latin1');
  const ok = socket.write(body);
  socket.uncork();
  return ok;
}

/** The end of a chunked body. */
export const LAST_CHUNK = '0\r\n\r\n';

/** An object's headers as name/value pairs (arrays give one pair per value). */
function toPairs(headers: OutgoingHeaders): string[] {
  const pairs: string[] = [];
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) pairs.push(name, v);
    else pairs.push(name, String(value));
  }
  return pairs;
}

/** What no header name or value may hold: a line break would start a header (or a body) of the sender's choosing. */
const LINE_BREAK = /[\r\n\0]/;

function headerLine(name: string, value: string): string {
  // Name and value are tested before they are joined: the joined line is never scanned (a regular
  // expression over each short string costs less than three scans of the whole line).
  if (LINE_BREAK.test(name) || LINE_BREAK.test(value)) throw new Error(`header ${JSON.stringify(name)} holds a line break`);
  return `${name}: ${value}\r\n`;
}

class RequestBody extends Readable {
  constructor(private readonly connection: Connection) {
    super();
    // A body can fail before anyone reads it (a queued pipelined request, an upstream still
    // connecting): the error stays in `errored` for the reader instead of being thrown.
    this.on('error', () => {});
  }

  override _read(): void {
    this.connection.resumeReading();
  }
}

/** A request as a client sent it to the gateway: the downstream side, in nginx's and Kong's words (upstream.ts is the other). */
export class DownstreamRequest {
  readonly method: string;
  readonly url: string;
  readonly httpVersion: '1.0' | '1.1';
  readonly rawHeaders: string[];
  /** Lower-case names; repeated headers joined with ", " ("; " for Cookie). */
  readonly headers: IncomingHttpHeaders;
  readonly keepAlive: boolean;
  /** The body, or null when the request has none. */
  readonly body: Readable | null;
  /** The whole request, body included, has arrived. */
  complete: boolean;

  constructor(
    head: MessageHead,
    readonly socket: Socket,
    connection: Connection,
  ) {
    this.method = head.method;
    this.url = head.url;
    this.httpVersion = head.versionMinor === 0 ? '1.0' : '1.1';
    this.rawHeaders = head.rawHeaders;
    this.keepAlive = head.keepAlive;
    const headers: Record<string, string> = {};
    const raw = head.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!.toLowerCase();
      const known = headers[name];
      headers[name] = known === undefined ? raw[i + 1]! : `${known}${name === 'cookie' ? '; ' : ', '}${raw[i + 1]!}`;
    }
    this.headers = headers;
    this.body = head.hasBody ? new RequestBody(connection) : null;
    this.complete = !head.hasBody;
  }
}

/** Told when the client goes away before its answer is complete. */
export interface AbortHandler {
  clientGone(): void;
}

/** The gateway's answer to one downstream request. */
export class DownstreamResponse {
  headersSent = false;
  writableFinished = false;
  destroyed = false;
  abortHandler: AbortHandler | null = null;
  private pendingHead: string | null = null;
  private chunked = false;
  private bodyless = false;
  /** The connection closes after this answer. */
  closeAfter = false;

  constructor(
    readonly req: DownstreamRequest,
    private readonly connection: Connection,
  ) {}

  /**
   * Sets the status and headers (an object, or name/value pairs), sent with
   * the first body bytes. Framing is the response's own: its
   * Content-Length, else chunked (HTTP/1.1) or closing the connection
   * (HTTP/1.0); Transfer-Encoding and Keep-Alive given here are dropped, and
   * Connection is kept only as an option the gateway itself names (426's "Upgrade").
   */
  writeHead(status: number, headers: OutgoingHeaders | readonly string[]): this {
    const pairs = Array.isArray(headers) ? (headers as readonly string[]) : toPairs(headers as OutgoingHeaders);
    let hasLength = false;
    let hasDate = false;
    let connection: string | null = null;
    let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n`;
    for (let i = 0; i < pairs.length; i += 2) {
      const name = pairs[i]!;
      const value = pairs[i + 1]!;
      // Only date (4), connection and keep-alive (10), content-length (14) and transfer-encoding (17)
      // matter here: other names are not lower-cased at all.
      const length = name.length;
      if (length === 4 || length === 10 || length === 14 || length === 17)
        switch (name.toLowerCase()) {
          case 'content-length':
            hasLength = true;
            break;
          case 'date':
            hasDate = true;
            break;
          case 'connection':
            connection = value;
            if (value.toLowerCase().includes('close')) this.closeAfter = true;
            continue;
          case 'transfer-encoding':
          case 'keep-alive':
            continue;
        }
      head += headerLine(name, value);
    }
    if (!hasDate) head += `Date: ${this.connection.server.httpDate()}\r\n`;
    this.bodyless = this.req.method === 'HEAD' || status === 204 || status === 304 || status < 200;
    if (!this.bodyless && !hasLength) {
      if (this.req.httpVersion === '1.1') {
        head += 'Transfer-Encoding: chunked\r\n';
        this.chunked = true;
      } else this.closeAfter = true;
    }
    if (!this.req.keepAlive || this.connection.closing()) this.closeAfter = true;
    if (this.closeAfter) head += 'Connection: close\r\n';
    else if (connection !== null) head += `Connection: ${connection}\r\n`;
    else if (this.req.httpVersion === '1.0') head += 'Connection: keep-alive\r\n';
    this.pendingHead = head + '\r\n';
    this.headersSent = true;
    return this;
  }

  /** Writes body bytes; false when the client is slow to take them (wait for `onceDrained`). */
  write(chunk: Buffer | string): boolean {
    if (this.destroyed) return false;
    const socket = this.connection.socket;
    const data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (this.pendingHead !== null && !this.chunked && !this.bodyless && data.length > 0) {
      const head = this.pendingHead;
      this.pendingHead = null;
      return writeHeadAndBody(socket, head, data);
    }
    socket.cork();
    this.flushHead();
    let ok = true;
    if (!this.bodyless && data.length > 0) ok = this.chunked ? writeChunk(socket, data) : socket.write(data);
    socket.uncork();
    return ok;
  }

  end(chunk?: Buffer | string): void {
    if (this.writableFinished || this.destroyed) return;
    // A proxied answer's bytes have all been written by now: nothing to cork.
    if (chunk !== undefined || this.pendingHead !== null || (this.chunked && !this.bodyless)) {
      const socket = this.connection.socket;
      socket.cork();
      if (chunk !== undefined) this.write(chunk);
      this.flushHead();
      if (this.chunked && !this.bodyless) socket.write(LAST_CHUNK, 'latin1');
      socket.uncork();
    }
    this.writableFinished = true;
    this.connection.finished(this);
  }

  /** Cuts the connection (an answer that cannot be completed). */
  destroy(): void {
    this.connection.socket.destroy();
  }

  /** Calls `fn` once the client has taken what was written. */
  onceDrained(fn: () => void): void {
    this.connection.socket.once('drain', fn);
  }

  /** The connection went away before the answer was complete. */
  aborted(): void {
    if (this.writableFinished || this.destroyed) return;
    this.destroyed = true;
    this.abortHandler?.clientGone();
  }

  private flushHead(): void {
    if (this.pendingHead === null) return;
    this.connection.socket.write(this.pendingHead, 'latin1');
    this.pendingHead = null;
  }
}

class Connection implements MessageEvents {
  private readonly parser: MessageParser;
  private current: DownstreamResponse | null = null;
  private readonly waiting: DownstreamResponse[] = [];
  /** The request whose body is arriving. */
  private receiving: DownstreamRequest | null = null;
  /** When the head now arriving began (0: none is). */
  headStartedAt = 0;
  idleSince = Date.now();
  private broken: ParseError | null = null;
  private peerEnded = false;

  constructor(
    readonly socket: Socket,
    readonly server: Http1Server,
  ) {
    this.parser = new MessageParser(server.options.parsers, 'request', this, server.options.maxHeaderSize);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('end', () => this.onEnd());
    // 'close' follows every error; there is nothing else to do with one.
    socket.on('error', () => {});
    socket.on('close', () => this.onClose());
  }

  closing(): boolean {
    // Requests already received are still answered: after a client's FIN the last of them
    // closes; after a parse error the 400 follows the answers ahead of it (finished()).
    return this.server.closing || (this.peerEnded && this.broken === null && this.waiting.length === 0);
  }

  /** Nothing in flight and nothing of a next request received. */
  idle(): boolean {
    return this.current === null && this.waiting.length === 0 && this.headStartedAt === 0;
  }

  private onData(chunk: Buffer): void {
    if (this.broken) return;
    const error = this.parser.execute(chunk);
    if (error) return this.fail(error);
    if (!this.parser.midHead()) this.headStartedAt = 0;
    else if (this.headStartedAt === 0) this.headStartedAt = Date.now();
  }

  onHead(head: MessageHead): boolean {
    const req = new DownstreamRequest(head, this.socket, this);
    const res = new DownstreamResponse(req, this);
    if (req.body) this.receiving = req;
    this.server.counters.total++;
    if (this.current) this.waiting.push(res);
    else this.start(res);
    return false;
  }

  onBody(chunk: Buffer): void {
    const req = this.receiving;
    if (req && !req.body!.push(chunk)) this.socket.pause();
  }

  onComplete(): void {
    const req = this.receiving;
    if (!req) return;
    this.receiving = null;
    req.complete = true;
    req.body!.push(null);
  }

  resumeReading(): void {
    if (!this.socket.destroyed) this.socket.resume();
  }

  private start(res: DownstreamResponse): void {
    this.current = res;
    this.server.counters.inFlight++;
    this.server.options.onRequest(res.req, res);
  }

  /** The current answer is complete: next request, or close. */
  finished(res: DownstreamResponse): void {
    if (this.current !== res) return;
    this.current = null;
    this.server.counters.inFlight--;
    this.idleSince = Date.now();
    // An unread body leaves the next request's start unknown.
    if (res.closeAfter || !res.req.complete) {
      this.socket.destroySoon();
      return;
    }
    const next = this.waiting.shift();
    if (next) this.start(next);
    else if (this.broken) this.server.options.onBadRequest(this.broken, this.socket);
    else if (this.peerEnded || this.server.closing) this.socket.destroySoon();
    else this.resumeReading();
  }

  /** The bytes received cannot be (or were not in time) a request. */
  fail(error: ParseError): void {
    this.broken = error;
    this.headStartedAt = 0;
    this.receiving?.body?.destroy(error);
    this.receiving = null;
    if (!this.current) this.server.options.onBadRequest(error, this.socket);
  }

  /** The client sent all it will: answer what is in flight, then close. */
  private onEnd(): void {
    this.peerEnded = true;
    const unfinished = this.receiving;
    this.receiving = null;
    if (unfinished) {
      unfinished.body!.destroy(new Error('the client closed in the middle of the body'));
      // A queued request whose body will never be whole is not answered (nginx logs 499).
      const at = this.waiting.findIndex((res) => res.req === unfinished);
      if (at >= 0) this.waiting.splice(at, 1);
    }
    if (!this.current) this.socket.destroySoon();
  }

  private onClose(): void {
    this.parser.close();
    this.server.forget(this);
    this.receiving?.body?.destroy();
    this.receiving = null;
    if (this.current) {
      this.server.counters.inFlight--;
      const current = this.current;
      this.current = null;
      current.aborted();
    }
    this.waiting.length = 0;
  }
}

/** One set of connections, fed by any number of listeners (the HTTP and HTTPS ones share it). */
export class Http1Server {
  readonly counters: ConnectionCounters = { accepted: 0, active: 0, inFlight: 0, total: 0 };
  private readonly connections = new Set<Connection>();
  closing = false;
  private readonly sweeper: NodeJS.Timeout;
  private drained: (() => void) | null = null;
  private dateSecond = -1;
  private dateText = '';

  constructor(readonly options: Http1Options) {
    const every = Math.min(1000, Math.max(50, Math.floor(options.headersTimeout / 4)));
    this.sweeper = setInterval(() => this.sweep(), every);
    this.sweeper.unref();
  }

  /** The listener for a server's 'connection' (net) or 'secureConnection' (tls) event. */
  readonly accept = (socket: Socket): void => {
    if (this.closing) {
      socket.destroy();
      return;
    }
    this.counters.accepted++;
    this.counters.active++;
    this.connections.add(new Connection(socket, this));
  };

  /** The Date header's value, formatted once a second. */
  httpDate(): string {
    const now = Date.now();
    const second = Math.floor(now / 1000);
    if (second !== this.dateSecond) {
      this.dateSecond = second;
      this.dateText = new Date(now).toUTCString();
    }
    return this.dateText;
  }

  forget(connection: Connection): void {
    if (!this.connections.delete(connection)) return;
    this.counters.active--;
    if (this.connections.size === 0) this.drained?.();
  }

  /** Slow heads get 408; keep-alive connections idle too long are closed. */
  private sweep(): void {
    const now = Date.now();
    const { headersTimeout, keepAliveTimeout } = this.options;
    for (const connection of this.connections) {
      if (connection.headStartedAt !== 0 && now - connection.headStartedAt > headersTimeout) {
        connection.fail(new ParseError('ERR_HTTP_REQUEST_TIMEOUT', 'request head timed out'));
      } else if (connection.idle() && now - connection.idleSince > keepAliveTimeout) {
        connection.socket.destroy();
      }
    }
  }

  /** Closes idle connections now and the others once their answer is complete. */
  close(): Promise<void> {
    this.closing = true;
    clearInterval(this.sweeper);
    for (const connection of this.connections) if (connection.idle()) connection.socket.destroy();
    if (this.connections.size === 0) return Promise.resolve();
    return new Promise((resolve) => (this.drained = resolve));
  }
}
