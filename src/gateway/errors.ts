/**
 * The gateway's one error mapping. Everything the proxy answers by itself
 * (no route, auth, rate limit, upstream failures, bad requests) is a
 * GatewayError rendered the way Kong 3.x renders `kong.response.error`: the
 * body follows the request's Accept header (JSON by default) and carries the
 * request id. The admin API answers Kong's `{ "message": … }` (toWireError).
 */
import { STATUS_CODES } from 'node:http';
import { XMLBuilder } from 'fast-xml-parser';
import { clientErrorStatus, type WireAnswer, WireError } from '../common/errors.ts';
import { ParseError } from './http/parser.ts';

/** A stable code per status, from its reason phrase (404 → NotFound, 429 → TooManyRequests). */
function codeFor(status: number): string {
  return (STATUS_CODES[status] ?? 'Error').replace(/[^A-Za-z]/g, '');
}

export class GatewayError extends WireError {
  constructor(
    status: number,
    message: string,
    readonly headers: Record<string, string | string[]> = {},
  ) {
    super(status, codeFor(status), message);
  }
}

/**
 * An answer a plugin gives instead of proxying, with its own body (a CORS
 * preflight, request-termination, a JSON list of failed JWT claims) rather
 * than the gateway's error template.
 */
export class PluginAnswer extends GatewayError {
  constructor(
    status: number,
    readonly body: string | Buffer,
    headers: Record<string, string | string[]> = {},
  ) {
    super(status, `answered by a plugin (${status})`, headers);
  }
}

/** Kong's messages for the statuses nginx or the balancer produce (error_handlers.lua). */
export const MESSAGES = {
  badRequest: 'Bad request',
  notFound: 'no Route matched with those values',
  requestTimeout: 'Request timeout',
  payloadTooLarge: 'Payload too large',
  headersTooLarge: 'Request header or cookie too large',
  unexpected: 'An unexpected error occurred',
  badGateway: 'An invalid response was received from the upstream server',
  unavailable: 'The upstream server is currently unavailable',
  nameResolution: 'name resolution failed',
  timeout: 'The upstream server is timing out',
  useHttps: 'Please use HTTPS protocol',
  noPeer: 'failure to get a peer from the ring-balancer',
  nonGrpc: 'Non-gRPC request matched gRPC route',
  useHttp2: 'Please use HTTP2 protocol',
} as const;

/**
 * What reading the client's request body failed with, as the proxy answers
 * it: a body that breaks its framing (a bad chunk size) is the client's
 * error, nginx's 400; anything else (the client left) is passed on as it is.
 */
export function clientBodyError(err: unknown): unknown {
  return err instanceof ParseError ? new GatewayError(400, MESSAGES.badRequest) : err;
}

type Format = 'json' | 'html' | 'xml' | 'plain';
const CONTENT_TYPES: Record<Format, string> = {
  json: 'application/json; charset=utf-8',
  html: 'text/html; charset=utf-8',
  xml: 'application/xml; charset=utf-8',
  plain: 'text/plain; charset=utf-8',
};
const MEDIA_TYPES: Record<string, Format> = {
  'application/json': 'json',
  'application/*': 'json',
  '*/*': 'json',
  'text/html': 'html',
  'text/*': 'html',
  'application/xml': 'xml',
  'text/xml': 'xml',
  'text/plain': 'plain',
};

/** Like Kong: the supported media type with the highest q wins; the first one on ties. */
function errorFormat(accept: string | undefined): Format {
  let format: Format = 'json';
  if (!accept) return format;
  let best = 0;
  for (const part of accept.split(',')) {
    const [type = '', ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find(Boolean);
    const quality = q === undefined ? 1 : Number(q);
    const known = MEDIA_TYPES[type.trim()];
    if (known && quality > best) {
      best = quality;
      format = known;
    }
  }
  return format;
}

const xml = new XMLBuilder({ format: true, indentBy: '  ' });
const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function renderError(message: string, requestId: string, accept: string | undefined): { contentType: string; body: string } {
  const format = errorFormat(accept);
  let body: string;
  switch (format) {
    case 'json':
      body = `{\n  "message":${JSON.stringify(message)},\n  "request_id":"${requestId}"\n}`;
      break;
    case 'plain':
      body = `${message}\nrequest_id: ${requestId}\n`;
      break;
    case 'xml':
      body = `<?xml version="1.0" encoding="UTF-8"?>\n${xml.build({ error: { message, requestid: requestId } })}`;
      break;
    case 'html': {
      const safe = message.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] ?? c);
      body = `<!doctype html>\n<html>\n  <head>\n    <meta charset="utf-8">\n    <title>Error</title>\n  </head>\n  <body>\n    <h1>Error</h1>\n    <p>${safe}.</p>\n    <p>request_id: ${requestId}</p>\n  </body>\n</html>\n`;
      break;
    }
  }
  return { contentType: CONTENT_TYPES[format], body };
}

/** One finding about a declarative file, in the one shape every refusal and warning takes: `<path>: <message>`. */
export function findingLine(finding: { path: string; message: string }): string {
  return `${finding.path || '(top level)'}: ${finding.message}`;
}

/** A declarative configuration that failed validation (or did not parse): every problem with its path. */
export class DeclarativeConfigError extends WireError {
  constructor(readonly errors: { path: string; message: string }[]) {
    super(400, 'InvalidDeclarativeConfig', `invalid declarative configuration:\n${errors.map((e) => `  ${findingLine(e)}`).join('\n')}`);
  }

  /** The message naming the file (or other source) it came from. */
  describe(source: string): string {
    return `${source}: ${this.message}`;
  }
}

/** The admin API's error answer, Kong-style `{ "message": … }` (plus the field list for a bad config). */
export function toWireError(err: unknown): WireAnswer {
  if (err instanceof DeclarativeConfigError) {
    const first = err.errors[0];
    return {
      status: 400,
      body: {
        code: 14,
        name: 'invalid declarative configuration',
        message: `declarative config is invalid: ${first ? `${first.path || '(top level)'}: ${first.message}` : ''}${err.errors.length > 1 ? ` (and ${err.errors.length - 1} more)` : ''}`,
        fields: Object.fromEntries(err.errors.map((e) => [e.path || '@entity', e.message])),
        flattened_errors: err.errors,
      },
    };
  }
  if (err instanceof GatewayError) return { status: err.status, headers: err.headers, body: { message: err.message } };
  const status = clientErrorStatus(err) ?? 500;
  const messages: Record<number, string> = { 404: 'Not found', 405: 'Method not allowed', 413: 'Payload too large', 415: 'Unsupported Media Type' };
  const message = status >= 500 ? MESSAGES.unexpected : (messages[status] ?? (err as Error).message);
  return { status, body: { message } };
}
