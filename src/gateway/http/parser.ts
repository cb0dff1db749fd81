/**
 * HTTP/1.1 message framing for both sides of the proxy: llhttp, the parser
 * of Node's own HTTP server, in the WebAssembly build that undici ships and
 * runs for its client, in llhttp's strict mode (no lenient flag is set:
 * header names are tokens, no control characters or folded lines in values,
 * one Content-Length and never beside Transfer-Encoding, hex chunk sizes,
 * CRLF line ends). On top of it the checks a gateway keeps: a Host on
 * HTTP/1.1, chunked as the last coding, a clean request target, a bounded
 * head.
 */
import { instantiateLlhttp, type Llhttp } from './llhttp.ts';

export interface MessageHead {
  /** Requests: the method and the request target as sent. */
  method: string;
  url: string;
  /** Responses: the status code. */
  statusCode: number;
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  versionMinor: number;
  /** Alternating names and values, as received. */
  rawHeaders: string[];
  keepAlive: boolean;
  /** A body follows (Content-Length > 0 or chunked; for responses also one read to EOF). */
  hasBody: boolean;
}

export interface MessageEvents {
  /** The head arrived; returning true says the message has no body (the answer to HEAD). */
  onHead(head: MessageHead): boolean;
  onBody(chunk: Buffer): void;
  onComplete(): void;
}

/** A framing error, with Node's parser codes (HPE_HEADER_OVERFLOW → 431, the rest → 400). */
export class ParseError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ParseError';
  }
}

// llhttp's enums (llhttp.h): parser types and the errors execute() returns.
const TYPE_REQUEST = 1;
const TYPE_RESPONSE = 2;
const OK = 0;
const PAUSED_UPGRADE = 22;
/** Returned from on_headers_complete: the message has no body (answers to HEAD). */
const SKIP_BODY = 1;

// A request target is visible ASCII or obs-text: no spaces or control characters.
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const BAD_TARGET = /[\x00-\x20\x7f]/;

/**
 * One llhttp instance and the parsers that share it (a proxy's client and
 * upstream connections). llhttp's callbacks get only a parser's WebAssembly
 * pointer, so the instance keeps which parser is running and where its
 * input chunk sits in WebAssembly memory.
 */
export class HttpParsers {
  readonly llhttp: Llhttp;
  active: MessageParser | null = null;
  activeChunk: Buffer = Buffer.alloc(0);
  activeBase = 0;
  /** The input buffer in WebAssembly memory, grown as chunks need. */
  private input = 0;
  private inputSize = 0;
  /** A view of WebAssembly memory, made again only when the memory grows (growing detaches the old one). */
  private view: Uint8Array | null = null;
  private readonly methodNames: string[] = [];
  /** Parsers whose connection was dropped without close(): llhttp's memory is freed when they are collected. */
  readonly unclosed = new FinalizationRegistry<number>((parser) => this.llhttp.llhttp_free(parser));

  constructor() {
    this.llhttp = instantiateLlhttp({
      wasm_on_message_begin: () => this.active!.messageBegin(),
      wasm_on_url: (_p, at, length) => this.active!.url(this.span(at, length)),
      wasm_on_status: () => 0,
      wasm_on_header_field: (_p, at, length) => this.active!.headerField(this.span(at, length)),
      wasm_on_header_value: (_p, at, length) => this.active!.headerValue(this.span(at, length)),
      wasm_on_headers_complete: (_p, statusCode, _upgrade, keepAlive) => this.active!.headersComplete(statusCode, keepAlive === 1),
      wasm_on_body: (_p, at, length) => this.active!.body(at - this.activeBase, length),
      wasm_on_message_complete: () => this.active!.messageComplete(),
    });
  }

  /** Where a span llhttp reports lies in the chunk being parsed. */
  private span(at: number, length: number): string {
    const start = at - this.activeBase;
    return this.activeChunk.toString('latin1', start, start + length);
  }

  /** A NUL-terminated string in WebAssembly memory. */
  cString(pointer: number): string {
    const bytes = new Uint8Array(this.llhttp.memory.buffer, pointer);
    return Buffer.from(bytes.buffer, pointer, bytes.indexOf(0)).toString('latin1');
  }

  methodName(method: number): string {
    return (this.methodNames[method] ??= this.cString(this.llhttp.llhttp_method_name(method)));
  }

  /** WebAssembly memory as bytes, for copying input in (one view, not one per chunk). */
  memoryView(): Uint8Array {
    const buffer = this.llhttp.memory.buffer;
    if (this.view === null || this.view.buffer !== buffer) this.view = new Uint8Array(buffer);
    return this.view;
  }

  inputFor(length: number): number {
    if (length > this.inputSize) {
      if (this.input) this.llhttp.free(this.input);
      this.inputSize = Math.ceil(length / 4096) * 4096;
      this.input = this.llhttp.malloc(this.inputSize);
    }
    return this.input;
  }
}

/** Checks the framing headers and measures the head; throws ParseError when the message must be refused. */
function checkHead(
  kind: 'request' | 'response',
  url: string,
  raw: string[],
  versionMajor: number,
  versionMinor: number,
  maxHeaderSize: number,
): { contentLength: number | null; chunked: boolean } {
  let size = kind === 'request' ? url.length : 0;
  let contentLength: number | null = null;
  let transferEncoding: string | null = null;
  let host = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    size += name.length + value.length + 4;
    if (name.length === 14 && name.toLowerCase() === 'content-length') {
      // llhttp has checked the digits and refused a second Content-Length.
      contentLength = Number(value);
    } else if (name.length === 17 && name.toLowerCase() === 'transfer-encoding') {
      transferEncoding = transferEncoding === null ? value : `${transferEncoding}, ${value}`;
    } else if (name.length === 4 && name.toLowerCase() === 'host') {
      if (host && kind === 'request') throw new ParseError('HPE_INVALID_HEADER_TOKEN', 'repeated Host header');
      host = true;
    }
  }
  if (size > maxHeaderSize) throw new ParseError('HPE_HEADER_OVERFLOW', 'header overflow');
  if (kind === 'request' && BAD_TARGET.test(url)) throw new ParseError('HPE_INVALID_URL', 'invalid request target');
  if (versionMajor !== 1) throw new ParseError('HPE_INVALID_VERSION', 'unsupported HTTP version');
  if (kind === 'request' && versionMinor === 1 && !host) throw new ParseError('HPE_INVALID_HEADER_TOKEN', 'missing Host header');
  let chunked = false;
  if (transferEncoding !== null) {
    // Both framings at once is how requests are smuggled; a coding other than chunked cannot be framed.
    if (contentLength !== null) throw new ParseError('HPE_UNEXPECTED_CONTENT_LENGTH', 'Content-Length with Transfer-Encoding');
    const codings = transferEncoding
      .toLowerCase()
      .split(',')
      .map((c) => c.trim());
    if (codings.at(-1) !== 'chunked' || codings.indexOf('chunked') !== codings.length - 1)
      throw new ParseError('HPE_INVALID_TRANSFER_ENCODING', 'unsupported Transfer-Encoding');
    if (kind === 'request' && codings.length > 1) throw new ParseError('HPE_INVALID_TRANSFER_ENCODING', 'unsupported Transfer-Encoding');
    chunked = true;
  }
  return { contentLength, chunked };
}

/** One side of one connection: feeds bytes in, calls `events` per message. */
export class MessageParser {
  private pointer: number;
  private inHead = false;
  private target = '';
  private headers: string[] = [];
  /** The header whose name (or value) is arriving; names and values can come in pieces across chunks. */
  private field = '';
  private value = '';
  private inField = false;
  private headBytes = 0;
  /** Where llhttp gives up on a head that never ends; the exact check is checkHead's. */
  private readonly headLimit: number;

  constructor(
    private readonly parsers: HttpParsers,
    private readonly kind: 'request' | 'response',
    private readonly events: MessageEvents,
    private readonly maxHeaderSize: number,
  ) {
    this.pointer = parsers.llhttp.llhttp_alloc(kind === 'request' ? TYPE_REQUEST : TYPE_RESPONSE);
    this.headLimit = Math.max(maxHeaderSize, 64 * 1024) + 16 * 1024;
    parsers.unclosed.register(this, this.pointer, this);
  }

  /**
   * Parses a chunk (its first `length` bytes: a socket that reads into one
   * buffer of its own passes that buffer whole); returns the error that
   * makes the connection unusable, if any. Body bytes handed to `onBody`
   * are views of `chunk`.
   */
  execute(chunk: Buffer, length = chunk.length): ParseError | null {
    if (this.pointer === 0) return new ParseError('HPE_CLOSED_CONNECTION', 'the connection is closed');
    const parsers = this.parsers;
    const llhttp = parsers.llhttp;
    // A parser called from another's event (none does today) gets its own input buffer.
    const nested = parsers.active !== null;
    const base = nested ? llhttp.malloc(length) : parsers.inputFor(length);
    chunk.copy(parsers.memoryView(), base, 0, length);
    // Saved in locals, not an object: this runs for every socket read.
    const outerParser = parsers.active;
    const outerChunk = parsers.activeChunk;
    const outerBase = parsers.activeBase;
    // llhttp's callbacks find the running parser here (they get only its WebAssembly pointer).
    parsers.active = this;
    parsers.activeChunk = chunk;
    parsers.activeBase = base;
    try {
      let at = base;
      for (;;) {
        const result = llhttp.llhttp_execute(this.pointer, at, length - (at - base));
        if (result === OK) return null;
        if (result !== PAUSED_UPGRADE) return this.failure(result);
        // llhttp stops after a request that asks for a protocol upgrade; the gateway
        // forwards such requests as plain ones, so parsing goes on with the rest.
        at = llhttp.llhttp_get_error_pos(this.pointer);
        llhttp.llhttp_resume_after_upgrade(this.pointer);
        if (at >= base + length) return null;
      }
    } catch (err) {
      // Thrown from the head check (or an event handler) inside a callback.
      return asParseError(err);
    } finally {
      parsers.active = outerParser;
      parsers.activeChunk = outerChunk;
      parsers.activeBase = outerBase;
      if (nested) llhttp.free(base);
    }
  }

  /** The peer closed: a response read to EOF ends here; anything else mid-message is an error. */
  finish(): ParseError | null {
    if (this.pointer === 0) return null;
    const parsers = this.parsers;
    const outer = parsers.active;
    parsers.active = this;
    try {
      const result = parsers.llhttp.llhttp_finish(this.pointer);
      return result === OK ? null : this.failure(result);
    } catch (err) {
      return asParseError(err);
    } finally {
      parsers.active = outer;
    }
  }

  /** Part of a head has arrived and the rest has not (what the header timeout watches). */
  midHead(): boolean {
    return this.inHead;
  }

  /** The connection is gone: llhttp's memory for it is freed. */
  close(): void {
    if (this.pointer === 0) return;
    this.parsers.unclosed.unregister(this);
    this.parsers.llhttp.llhttp_free(this.pointer);
    this.pointer = 0;
  }

  // llhttp's callbacks, for the parser that is running. 0 goes on; a throw stops the connection.

  messageBegin(): number {
    this.inHead = true;
    this.target = '';
    this.headers = [];
    this.inField = false;
    this.field = '';
    this.value = '';
    this.headBytes = 0;
    return 0;
  }

  url(piece: string): number {
    this.count(piece.length);
    this.target += piece;
    return 0;
  }

  headerField(piece: string): number {
    this.count(piece.length);
    if (this.inField) {
      this.field += piece;
      return 0;
    }
    if (this.field) this.headers.push(this.field, this.value.trim());
    this.field = piece;
    this.value = '';
    this.inField = true;
    return 0;
  }

  headerValue(piece: string): number {
    this.count(piece.length);
    this.value += piece;
    this.inField = false;
    return 0;
  }

  headersComplete(statusCode: number, keepAlive: boolean): number {
    if (this.field) this.headers.push(this.field, this.value.trim());
    this.field = '';
    this.inHead = false;
    const { kind, pointer, parsers } = this;
    const llhttp = parsers.llhttp;
    const versionMinor = llhttp.llhttp_get_http_minor(pointer);
    const { contentLength, chunked } = checkHead(kind, this.target, this.headers, llhttp.llhttp_get_http_major(pointer), versionMinor, this.maxHeaderSize);
    const bodylessStatus = kind === 'response' && (statusCode < 200 || statusCode === 204 || statusCode === 304);
    const noBody = this.events.onHead({
      method: kind === 'request' ? parsers.methodName(llhttp.llhttp_get_method(pointer)) : '',
      url: this.target,
      statusCode,
      versionMinor,
      rawHeaders: this.headers,
      keepAlive,
      hasBody: !bodylessStatus && (chunked || (contentLength === null ? kind === 'response' : contentLength > 0)),
    });
    return noBody ? SKIP_BODY : 0;
  }

  body(start: number, length: number): number {
    const chunk = this.parsers.activeChunk;
    this.events.onBody(start === 0 && length === chunk.length ? chunk : chunk.subarray(start, start + length));
    return 0;
  }

  messageComplete(): number {
    this.events.onComplete();
    return 0;
  }

  private count(length: number): void {
    this.headBytes += length;
    if (this.headBytes > this.headLimit) throw new ParseError('HPE_HEADER_OVERFLOW', 'header overflow');
  }

  private failure(errno: number): ParseError {
    const { llhttp } = this.parsers;
    const reason = llhttp.llhttp_get_error_reason(this.pointer);
    return new ParseError(this.parsers.cString(llhttp.llhttp_errno_name(errno)), reason ? this.parsers.cString(reason) : 'parse error');
  }
}

function asParseError(err: unknown): ParseError {
  if (err instanceof ParseError) return err;
  const e = err as { code?: string; message?: string };
  return new ParseError(e.code ?? 'HPE_INVALID', e.message ?? 'parse error');
}
