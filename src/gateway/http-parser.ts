/**
 * HTTP/1.1 message framing for both sides of the proxy: http-parser-js (a
 * pure-JS parser with the interface of Node's own), held to the rules a
 * gateway must keep where that parser is lenient — header names must be
 * tokens, no control characters or folded lines, one exact Content-Length,
 * no Transfer-Encoding other than chunked beside it, hex chunk sizes, a
 * bounded head.
 */
import { HTTPParser, type ParsedInfo } from 'http-parser-js';

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

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Control characters other than tab are refused in values (RFC 9110 §5.5).
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const BAD_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/;
const DIGITS = /^\d{1,15}$/;
// A request target is visible ASCII or obs-text: no spaces or control characters.
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const BAD_TARGET = /[\x00-\x20\x7f]/;
const CHUNK_SIZE = /^[0-9a-fA-F]{1,12}[ \t]*(;.*)?$/;

/** http-parser-js with its lenient spots made strict. */
class StrictParser extends HTTPParser {
  override parseHeader(line: string, headers: string[]): void {
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon) : '';
    if (!TOKEN.test(name)) throw new ParseError('HPE_INVALID_HEADER_TOKEN', 'invalid header line');
    const value = line.slice(colon + 1).trim();
    if (BAD_VALUE.test(value)) throw new ParseError('HPE_INVALID_HEADER_TOKEN', 'invalid header value');
    headers.push(name, value);
  }

  /** Chunk sizes must be hex (the library reads `parseInt`, which takes "zz" as the last chunk). */
  BODY_CHUNKHEAD(): void {
    const line = this.consumeLine();
    if (line === undefined) return;
    if (!CHUNK_SIZE.test(line)) throw new ParseError('HPE_INVALID_CHUNK_SIZE', 'invalid chunk size');
    this.body_bytes = parseInt(line, 16);
    this.state = this.body_bytes ? 'BODY_CHUNK' : 'BODY_CHUNKTRAILERS';
  }
}

/** Checks the framing headers and measures the head; throws ParseError when the message must be refused. */
function checkHead(kind: 'request' | 'response', info: ParsedInfo, maxHeaderSize: number): { contentLength: number | null; chunked: boolean } {
  const raw = info.headers;
  let size = kind === 'request' ? info.url.length : 0;
  let contentLength: number | null = null;
  let transferEncoding: string | null = null;
  let host = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    size += name.length + value.length + 4;
    if (name.length === 14 && name.toLowerCase() === 'content-length') {
      if (!DIGITS.test(value)) throw new ParseError('HPE_INVALID_CONTENT_LENGTH', 'invalid Content-Length');
      const n = Number(value);
      if (contentLength !== null && contentLength !== n) throw new ParseError('HPE_UNEXPECTED_CONTENT_LENGTH', 'conflicting Content-Length');
      contentLength = n;
    } else if (name.length === 17 && name.toLowerCase() === 'transfer-encoding') {
      transferEncoding = transferEncoding === null ? value : `${transferEncoding}, ${value}`;
    } else if (name.length === 4 && name.toLowerCase() === 'host') {
      if (host && kind === 'request') throw new ParseError('HPE_INVALID_HEADER_TOKEN', 'repeated Host header');
      host = true;
    }
  }
  if (size > maxHeaderSize) throw new ParseError('HPE_HEADER_OVERFLOW', 'header overflow');
  if (kind === 'request' && BAD_TARGET.test(info.url)) throw new ParseError('HPE_INVALID_URL', 'invalid request target');
  if (info.versionMajor !== 1) throw new ParseError('HPE_INVALID_VERSION', 'unsupported HTTP version');
  if (kind === 'request' && info.versionMinor === 1 && !host) throw new ParseError('HPE_INVALID_HEADER_TOKEN', 'missing Host header');
  let chunked = false;
  if (transferEncoding !== null) {
    // Both framings at once is how requests are smuggled; a coding other than chunked cannot be framed.
    if (contentLength !== null) throw new ParseError('HPE_UNEXPECTED_CONTENT_LENGTH', 'Content-Length with Transfer-Encoding');
    const codings = transferEncoding.toLowerCase().split(',').map((c) => c.trim());
    if (codings.at(-1) !== 'chunked' || codings.indexOf('chunked') !== codings.length - 1) throw new ParseError('HPE_INVALID_TRANSFER_ENCODING', 'unsupported Transfer-Encoding');
    if (kind === 'request' && codings.length > 1) throw new ParseError('HPE_INVALID_TRANSFER_ENCODING', 'unsupported Transfer-Encoding');
    chunked = true;
  }
  return { contentLength, chunked };
}

/** One side of one connection: feeds bytes in, calls `events` per message. */
export class MessageParser {
  private readonly parser: StrictParser;

  constructor(kind: 'request' | 'response', events: MessageEvents, maxHeaderSize: number) {
    const parser = new StrictParser(kind === 'request' ? HTTPParser.REQUEST : HTTPParser.RESPONSE);
    // The library counts head bytes per execute() call; ours is the exact check in checkHead,
    // this one only stops a head that never ends (a whole socket read of 64 KiB fits under it).
    parser.maxHeaderSize = Math.max(maxHeaderSize, 64 * 1024) + 16 * 1024;
    parser[HTTPParser.kOnHeadersComplete] = (info) => {
      const { contentLength, chunked } = checkHead(kind, info, maxHeaderSize);
      const status = info.statusCode;
      const bodylessStatus = kind === 'response' && (status < 200 || status === 204 || status === 304);
      return events.onHead({
        method: kind === 'request' ? HTTPParser.methods[info.method]! : '',
        url: info.url,
        statusCode: status,
        versionMinor: info.versionMinor,
        rawHeaders: info.headers,
        keepAlive: info.shouldKeepAlive,
        hasBody: !bodylessStatus && (chunked || (contentLength === null ? kind === 'response' : contentLength > 0)),
      });
    };
    parser[HTTPParser.kOnBody] = (chunk, start, length) => events.onBody(start === 0 && length === chunk.length ? chunk : chunk.subarray(start, start + length));
    parser[HTTPParser.kOnMessageComplete] = () => events.onComplete();
    this.parser = parser;
  }

  /** Parses a chunk; returns the error that makes the connection unusable, if any. */
  execute(chunk: Buffer): ParseError | null {
    let rest = chunk;
    try {
      while (rest.length > 0) {
        const result = this.parser.execute(rest);
        if (result instanceof Error) return asParseError(result);
        // The library stops after a head that asks for a protocol upgrade; the gateway
        // forwards such requests as plain ones, so parsing goes on with the rest.
        if (result >= rest.length) break;
        rest = rest.subarray(result);
      }
    } catch (err) {
      // Thrown from the head check (or an event handler) inside the library's callback.
      return asParseError(err);
    }
    return null;
  }

  /** The peer closed: a response read to EOF ends here; anything else mid-message is an error. */
  finish(): ParseError | null {
    try {
      const result = this.parser.finish();
      return result instanceof Error ? asParseError(result) : null;
    } catch (err) {
      return asParseError(err);
    }
  }

  /** Part of a head has arrived and the rest has not (what the header timeout watches). */
  midHead(): boolean {
    const { state } = this.parser;
    return state === 'HEADER' || ((state === 'REQUEST_LINE' || state === 'RESPONSE_LINE') && this.parser.line.length > 0);
  }
}

function asParseError(err: unknown): ParseError {
  if (err instanceof ParseError) return err;
  const e = err as { code?: string; message?: string };
  if (e.message === 'max header size exceeded') return new ParseError('HPE_HEADER_OVERFLOW', 'header overflow');
  return new ParseError(e.code ?? 'HPE_INVALID', e.message ?? 'parse error');
}
