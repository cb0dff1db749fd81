/**
 * The proxy: match a route, enforce its protocols, run its plugins, pass
 * the request to the service and stream the answer back, with Kong's
 * headers both ways. Plain node:http rather than fastify, because a proxy
 * must neither parse nor buffer bodies and must shape every byte of its own
 * error answers.
 */
import { randomBytes } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Balancer, Peer } from './balancer.ts';
import { clientBodyError, GatewayError, MESSAGES, PluginAnswer, renderError } from '../errors.ts';
import type { DownstreamRequest, DownstreamResponse } from '../http/server.ts';
import type { UpstreamPools } from '../http/upstream.ts';
import type { Consumer, Credential, Route, Service } from '../config/model.ts';
import {
  pluginFor,
  setOrClearHeader,
  type AnswerLog,
  type ConsumerDirectory,
  type PluginHandler,
  type PluginSlot,
  type RequestContext,
} from '../plugins/types.ts';
import { getHeader } from '../plugins/headers.ts';
import type { LoadedConfig } from './compile.ts';
import { normalizePath, upstreamPath, withoutPort, type RouteMatch } from './router.ts';
import type { ProxyTraffic } from './traffic.ts';
import { WholeAnswer } from './whole-answer.ts';

/** A balanced request's tries: `next` gives the next target (the one before failed), `current` is the one in use. */
interface PeerTries {
  current: Peer | null;
  next: () => Service;
}

/** What the proxy calls itself in Via and Server (it does not claim to be Kong). */
export const PRODUCT = 'offcloud-gateway/0.1';
/** The gateway's own Via entry. */
const VIA = `1.1 ${PRODUCT}`;

export interface ProxyOptions {
  /** The configuration in force; each request keeps the one it started with across a reload. */
  config(): LoadedConfig;
  pools: UpstreamPools;
  /** Addresses whose X-Forwarded-* and X-Real-IP headers are believed (Kong's trusted_ips). */
  trustedIps: readonly string[];
  /** Largest request body, bytes (0 = no limit). */
  maxBodySize: number;
  /** The HTTPS listener's port, for https_redirect_status_code redirects. */
  httpsPort(): number | null;
  logger: Logger;
  /** Where answers are counted and the last requests kept, for the admin API. */
  traffic: ProxyTraffic;
}

/**
 * Headers that describe one connection, never forwarded (RFC 9110 §7.6.1),
 * plus `expect`, which the gateway answers itself. A switch: it runs for
 * every header both ways, and a Set would hash each fresh name first.
 */
function isHopByHop(lowerCaseName: string): boolean {
  switch (lowerCaseName) {
    case 'connection':
    case 'keep-alive':
    case 'proxy-connection':
    case 'te':
    case 'trailer':
    case 'transfer-encoding':
    case 'upgrade':
    case 'expect':
    case 'http2-settings':
      return true;
    default:
      return false;
  }
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** A forwarding header of the client's, believed only from a trusted address. */
function trustedHeader(req: DownstreamRequest, trusted: boolean, name: string): string | undefined {
  return trusted ? first(req.headers[name]) : undefined;
}

function isTrusted(trusted: readonly string[], address: string): boolean {
  if (!address || trusted.length === 0) return false;
  if (trusted.includes('0.0.0.0/0') || trusted.includes('::/0')) return true;
  return trusted.includes(address) || trusted.includes(`::ffff:${address}`);
}

/** The client's address, an IPv4 one without its IPv6-mapped prefix. */
function clientAddress(req: DownstreamRequest): string {
  const address = req.socket.remoteAddress ?? '';
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}

/** Copies the client's headers minus hop-by-hop ones (and those its Connection header names). */
function forwardableHeaders(req: DownstreamRequest): Record<string, string | string[]> {
  const connection = req.headers.connection;
  const named =
    connection === undefined
      ? null
      : connection
          .toLowerCase()
          .split(',')
          .map((s) => s.trim());
  const out: Record<string, string | string[]> = {};
  const headers = req.headers;
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || isHopByHop(name) || (named !== null && named.includes(name))) continue;
    out[name] = value;
  }
  return out;
}

/**
 * Whether a header name of this length can be hop-by-hop, Via or Server
 * (te 2, via 3, server and expect 6, trailer and upgrade 7, connection and
 * keep-alive 10, http2-settings 14, proxy-connection 16, transfer-encoding
 * 17): other names are passed on without being lower-cased.
 */
function maySpecial(length: number): boolean {
  switch (length) {
    case 2:
    case 3:
    case 6:
    case 7:
    case 10:
    case 14:
    case 16:
    case 17:
      return true;
    default:
      return false;
  }
}

/**
 * The client's answer headers as name/value pairs: the upstream's, less
 * hop-by-hop ones, with the gateway's Via, Server (when the upstream sent
 * none), latencies (ms), request id and what plugins added.
 */
function responseHeaders(upstream: readonly string[], ctx: RequestContext, upstreamLatency: number, proxyLatency: number): string[] {
  const out: string[] = [];
  let via: string | null = null;
  let server = false;
  // Headers a plugin set replace the service's of the same name (Kong's kong.response.set_header).
  const replaced = replacedNames(ctx.responseHeaders);
  for (let i = 0; i < upstream.length; i += 2) {
    const name = upstream[i]!;
    if (replaced !== null && replaced.has(name.toLowerCase())) continue;
    if (!maySpecial(name.length)) {
      out.push(name, upstream[i + 1]!);
      continue;
    }
    const lower = name.toLowerCase();
    if (isHopByHop(lower)) continue;
    if (lower === 'via') {
      via = via === null ? upstream[i + 1]! : `${via}, ${upstream[i + 1]!}`;
      continue;
    }
    if (lower === 'server') server = true;
    out.push(name, upstream[i + 1]!);
  }
  out.push('Via', via === null ? VIA : `${via}, ${VIA}`);
  if (!server) out.push('Server', PRODUCT);
  out.push('X-Kong-Upstream-Latency', String(upstreamLatency), 'X-Kong-Proxy-Latency', String(proxyLatency), 'X-Kong-Request-Id', ctx.requestId);
  for (const name in ctx.responseHeaders) out.push(name, ctx.responseHeaders[name]!);
  return out;
}

/** The lower-case names of the headers plugins set, or null when they set none (the usual case: nothing to compare). */
function replacedNames(headers: Record<string, string>): Set<string> | null {
  let names: Set<string> | null = null;
  for (const name in headers) (names ??= new Set()).add(name.toLowerCase());
  return names;
}

/**
 * The route's plugins from `from` on, in order; a promise only when one of
 * them waits (the rest then run after it), so the common chain runs
 * without one.
 */
function runPlugins(ctx: ProxyContext, slots: readonly PluginSlot[], scheme: 'http' | 'https', from: number): Promise<void> | undefined {
  for (let i = from; i < slots.length; i++) {
    const instance = pluginFor(slots[i]!, ctx.consumer);
    if (!instance || !instance.entity.protocols.includes(scheme)) continue;
    ctx.plugin = slots[i]!.name;
    const { handler } = instance;
    if (handler.header || handler.log) (ctx.later ??= []).push(handler);
    const pending = handler.access(ctx);
    if (pending) return pending.then(() => runPlugins(ctx, slots, scheme, i + 1));
  }
  ctx.plugin = null;
  return undefined;
}

/**
 * The plugins whose later phases see the gateway's own answer: those that
 * ran, and those of the chain a refusal kept from running that have a log
 * phase (Kong logs every request with every plugin configured for it).
 */
function withLogPhases(ctx: ProxyContext): PluginHandler[] | null {
  let later = ctx.later;
  for (const slot of ctx.slots) {
    const handler = pluginFor(slot, ctx.consumer)?.handler;
    if (handler?.log && !later?.includes(handler)) (later ??= []).push(handler);
  }
  return later;
}

const hasBodyPhase = (plugin: PluginHandler) => plugin.body !== undefined;

/** The header_filter phases of the plugins that ran (`headers` editable), then their log phases. */
function afterAnswer(
  ctx: ProxyContext,
  plugins: PluginHandler[],
  status: number,
  headers: string[],
  latency: number,
  upstreamLatency: number,
  source: AnswerLog['source'],
): void {
  for (const plugin of plugins) plugin.header?.(ctx, status, headers);
  const entry: AnswerLog = {
    status,
    source,
    latency,
    upstreamLatency,
    requestSize: Number(first(ctx.clientHeaders['content-length']) ?? 0) || 0,
    responseSize: Number(getHeader(headers, 'content-length') ?? 0) || 0,
    headers,
  };
  for (const plugin of plugins) plugin.log?.(ctx, entry);
}

/** The whole request body, for a plugin that reads it (bounded like a streamed one). */
async function readWholeBody(req: DownstreamRequest, maxBodySize: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  if (!req.body) return Buffer.alloc(0);
  try {
    for await (const chunk of req.body.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      total += chunk.length;
      if (maxBodySize && total > maxBodySize) throw new GatewayError(413, MESSAGES.payloadTooLarge);
      chunks.push(chunk);
    }
  } catch (err) {
    throw clientBodyError(err);
  }
  return Buffer.concat(chunks);
}

/** What plugins see of one request (RequestContext), built once per request. */
class ProxyContext implements RequestContext {
  readonly requestId: string;
  method: string;
  readonly scheme: 'http' | 'https';
  readonly path: string;
  query: string;
  readonly clientHeaders: DownstreamRequest['headers'];
  readonly upstreamHeaders: Record<string, string | string[]>;
  readonly responseHeaders: Record<string, string>;
  readonly forwardedIp: string;
  readonly route: Route;
  readonly service: Service;
  consumer: Consumer | null = null;
  credential: Credential | null = null;
  readonly directory: ConsumerDirectory;
  body: Buffer | null = null;
  /** The plugin running now: one that throws has refused the request. */
  plugin: string | null = null;
  upstreamPath: string | null = null;
  upstreamUri: string | null = null;
  /** The route's plugin chain. */
  readonly slots: readonly PluginSlot[];
  /** Plugins that ran and have a header_filter or log phase, in order (null when none: most requests). */
  later: PluginHandler[] | null = null;
  private buffered: Promise<Buffer> | null = null;

  constructor(
    private readonly req: DownstreamRequest,
    match: RouteMatch,
    config: LoadedConfig,
    given: {
      requestId: string;
      scheme: 'http' | 'https';
      path: string;
      query: string;
      trusted: boolean;
      address: string;
      responseHeaders: Record<string, string>;
    },
    private readonly maxBodySize: number,
  ) {
    this.requestId = given.requestId;
    this.method = req.method;
    this.scheme = given.scheme;
    this.path = given.path;
    this.query = given.query;
    this.clientHeaders = req.headers;
    this.upstreamHeaders = forwardableHeaders(req);
    this.responseHeaders = given.responseHeaders;
    const realIp = given.trusted ? (first(req.headers['x-real-ip']) ?? first(req.headers['x-forwarded-for'])?.split(',')[0]?.trim()) : undefined;
    this.forwardedIp = realIp || given.address;
    this.route = match.candidate.route;
    this.slots = match.candidate.plugins;
    this.service = match.candidate.service;
    this.directory = config.directory;
  }

  headerValues(name: string): string[] {
    // rawHeaders keeps repeats apart; scanning it beats building a per-header list for every request.
    const values: string[] = [];
    const raw = this.req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === name.length && raw[i]!.toLowerCase() === name) values.push(raw[i + 1]!);
    return values;
  }

  requestTarget(): string {
    return this.req.url;
  }

  serverPort(): number {
    return this.req.socket.localPort ?? 0;
  }

  httpVersion(): string {
    return this.req.httpVersion;
  }

  readBody(): Promise<Buffer> {
    return (this.buffered ??= readWholeBody(this.req, this.maxBodySize).then((body) => (this.body = body)));
  }

  replaceBody(body: Buffer): void {
    this.body = body;
    this.buffered = Promise.resolve(body);
  }
}

/** The proxy itself: matches a route, runs its plugins, and forwards the request upstream. */
export class GatewayProxy {
  /**
   * Request ids: 32 hex digits like Kong's, a random per-proxy half and a
   * counter half, unique without drawing randomness for every request.
   */
  private readonly idPrefix = randomBytes(8).toString('hex');
  private idCounter = 0;

  constructor(private readonly options: ProxyOptions) {}

  private nextRequestId(): string {
    this.idCounter = (this.idCounter + 1) % Number.MAX_SAFE_INTEGER;
    return this.idPrefix + this.idCounter.toString(16).padStart(16, '0');
  }

  /** The request listener for one listener (`scheme` is what the client connected with). */
  listener(scheme: 'http' | 'https'): (req: DownstreamRequest, res: DownstreamResponse) => void {
    return (req, res) => this.handle(req, res, scheme);
  }

  /**
   * One request. Synchronous up to the forward (or a plugin that waits): no
   * async function's frame per request; whatever fails, at once or later,
   * is answered by `failed`.
   */
  private handle(req: DownstreamRequest, res: DownstreamResponse, scheme: 'http' | 'https'): void {
    const started = performance.now();
    const requestId = this.nextRequestId();
    const responseHeaders: Record<string, string> = {};
    // The request's context once it is routed, for the answer to a failure.
    const routed: { ctx: ProxyContext | null } = { ctx: null };
    let done: Promise<void>;
    try {
      done = this.pass(req, res, scheme, started, requestId, responseHeaders, routed);
    } catch (err) {
      this.failed(err, routed.ctx, req, res, requestId, responseHeaders, started);
      return;
    }
    done.then(undefined, (err: unknown) => this.failed(err, routed.ctx, req, res, requestId, responseHeaders, started));
  }

  /** Routes, checks and runs the plugins, then forwards; throws (or rejects) what the client is answered with instead. */
  private pass(
    req: DownstreamRequest,
    res: DownstreamResponse,
    scheme: 'http' | 'https',
    started: number,
    requestId: string,
    responseHeaders: Record<string, string>,
    routed: { ctx: ProxyContext | null },
  ): Promise<void> {
    const config = this.options.config();
    const rawUrl = req.url;
    const q = rawUrl.indexOf('?');
    const rawPath = q < 0 ? rawUrl : rawUrl.slice(0, q);
    const path = normalizePath(rawPath);
    const method = req.method;
    const match = config.routes.match({ method, host: req.headers.host, path, headers: req.headers });
    if (!match) throw new GatewayError(404, MESSAGES.notFound);

    const address = clientAddress(req);
    const trusted = isTrusted(this.options.trustedIps, address);
    const forwardedProto = (trusted && first(req.headers['x-forwarded-proto'])?.toLowerCase()) || scheme;
    const given = { requestId, scheme, path, query: q < 0 ? '' : rawUrl.slice(q + 1), trusted, address, responseHeaders };
    const ctx = new ProxyContext(req, match, config, given, this.options.maxBodySize);
    routed.ctx = ctx;
    this.enforceProtocols(match, forwardedProto, req, rawUrl);
    const protocol = match.candidate.route.protocols[0];
    if (protocol === 'grpc' || protocol === 'grpcs') refuseGrpcRoute(req);

    const info = { started, forwardedProto, trusted, address, rawPath };
    const waiting = runPlugins(ctx, match.candidate.plugins, scheme, 0);
    if (waiting) return waiting.then(() => this.forward(req, res, ctx, match, info));
    return this.forward(req, res, ctx, match, info);
  }

  /** A request that could not be passed on: its error answer, or a cut connection. */
  private failed(
    err: unknown,
    ctx: ProxyContext | null,
    req: DownstreamRequest,
    res: DownstreamResponse,
    requestId: string,
    responseHeaders: Record<string, string>,
    started: number,
  ): void {
    try {
      // A client that went away gets nothing; one whose answer had begun gets a cut connection.
      if (res.destroyed) return;
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const error = err instanceof GatewayError ? err : new GatewayError(500, MESSAGES.unexpected);
      if (!(err instanceof GatewayError)) this.options.logger.error({ err }, 'unexpected proxy error');
      const latency = performance.now() - started;
      const { traffic } = this.options;
      const unrouted = { requestId, method: req.method, path: req.url.split('?')[0]!, route: null, service: null, consumer: null };
      traffic.answered(ctx ?? unrouted, error.status, started, latency);
      if (ctx?.plugin && error.status >= 400) traffic.rejected(ctx.plugin, ctx.route, ctx.service, error.status);
      this.sendError(req, res, error, requestId, { ...responseHeaders, 'X-Kong-Response-Latency': String(Math.round(latency)) }, ctx, latency);
    } catch (failure) {
      this.options.logger.error({ err: failure }, 'proxy failure');
      if (!res.headersSent) res.writeHead(500, {}).end();
      else res.destroy();
    }
  }

  /** Kong's https-only check: 426 with its Upgrade headers, or the configured redirect. */
  private enforceProtocols(match: RouteMatch, forwardedProto: string, req: DownstreamRequest, rawUrl: string): void {
    const { route } = match.candidate;
    if (!route.protocols.includes('https') || route.protocols.includes('http') || forwardedProto === 'https') return;
    const code = route.https_redirect_status_code;
    if (code === 426) throw new GatewayError(426, MESSAGES.useHttps, { Connection: 'Upgrade', Upgrade: 'TLS/1.2, HTTP/1.1' });
    // Kong sends the bare host; the HTTPS port is added when it is not 443 so the redirect works here.
    const host = withoutPort(req.headers.host ?? 'localhost');
    const port = this.options.httpsPort();
    throw new GatewayError(code, '', { Location: `https://${host}${port && port !== 443 ? `:${port}` : ''}${rawUrl}` });
  }

  /**
   * The targets of a balanced service, one per try: each call after the
   * first means the previous target failed, and each sets the Host header
   * for its target unless the client's is preserved.
   */
  private peers(balancer: Balancer, headers: Record<string, string | string[]>, preserveHost: boolean): PeerTries {
    const failed: Peer[] = [];
    const tries = {
      current: null as Peer | null,
      next: () => {
        if (tries.current) {
          failed.push(tries.current);
          balancer.health.report(tries.current.target, 'tcp_failure');
        }
        const current = (tries.current = balancer.pick(failed));
        if (!preserveHost) headers.host = current.hostHeader;
        return current.service;
      },
    };
    return tries;
  }

  private forward(
    req: DownstreamRequest,
    res: DownstreamResponse,
    ctx: ProxyContext,
    match: RouteMatch,
    info: { started: number; forwardedProto: string; trusted: boolean; address: string; rawPath: string },
  ): Promise<void> {
    const { route, service } = match.candidate;
    const declared = Number(req.headers['content-length'] ?? 0);
    if (this.options.maxBodySize && declared > this.options.maxBodySize) throw new GatewayError(413, MESSAGES.payloadTooLarge);
    const headers = ctx.upstreamHeaders;
    const { address } = info;
    const socket = req.socket;
    const { balancer } = match.candidate;
    const preserveHost = route.preserve_host && req.headers.host !== undefined;
    if (preserveHost) headers.host = req.headers.host!;
    else if (!balancer) headers.host = match.candidate.hostHeader;
    const xff = req.headers['x-forwarded-for'];
    headers['x-forwarded-for'] = xff ? `${xff}, ${address}` : address;
    headers['x-forwarded-proto'] = info.forwardedProto;
    headers['x-forwarded-host'] = trustedHeader(req, info.trusted, 'x-forwarded-host') ?? withoutPort(req.headers.host ?? '');
    headers['x-forwarded-port'] = trustedHeader(req, info.trusted, 'x-forwarded-port') ?? String(socket.localPort ?? '');
    headers['x-forwarded-path'] = trustedHeader(req, info.trusted, 'x-forwarded-path') ?? info.rawPath;
    const prefix = trustedHeader(req, info.trusted, 'x-forwarded-prefix') ?? (route.strip_path && match.matched !== '/' ? match.matched : undefined);
    setOrClearHeader(headers, 'x-forwarded-prefix', prefix || null);
    headers['x-real-ip'] = ctx.forwardedIp;
    headers.via = req.headers.via ? `${req.headers.via}, ${VIA}` : VIA;
    headers['x-kong-request-id'] = ctx.requestId;
    if (ctx.body) {
      headers['content-length'] = String(ctx.body.length);
      delete headers['transfer-encoding'];
    }
    const path = (ctx.upstreamPath ?? upstreamPath(route, service.path, ctx.path, match.matched)) + (ctx.query ? `?${ctx.query}` : '');
    ctx.upstreamUri = path;

    const sentAt = performance.now();
    const { traffic } = this.options;
    const whole = ctx.later !== null && ctx.later.some(hasBodyPhase) ? new WholeAnswer(res, ctx, ctx.later.filter(hasBodyPhase)) : null;
    const tries = balancer ? this.peers(balancer, headers, preserveHost) : null;
    const forwarded = this.options.pools.forward({
      service,
      peer: tries?.next,
      method: ctx.method,
      path,
      headers,
      body: ctx.body ?? req.body,
      maxBodySize: this.options.maxBodySize,
      client: whole ?? res,
      // A method, not an arrow: tsx names every arrow it sees assigned, at a cost per request.
      onResponse(status, upstream) {
        const answeredAt = performance.now();
        traffic.answered(ctx, status, info.started, answeredAt - info.started);
        const headers = responseHeaders(upstream, ctx, Math.round(answeredAt - sentAt), Math.round(sentAt - info.started));
        if (ctx.later !== null) afterAnswer(ctx, ctx.later, status, headers, answeredAt - info.started, answeredAt - sentAt, 'service');
        if (whole) whole.head(status, headers);
        else res.writeHead(status, headers);
        if (tries?.current && balancer!.health.enabled) balancer!.health.report(tries.current.target, { status });
      },
    });
    if (!tries || !balancer!.health.enabled) return forwarded;
    // Kong's passive checks count the last try's failure too: a timeout as a timeout, else a failed connection.
    return forwarded.catch((err: unknown) => {
      const outcome = err instanceof GatewayError ? (err.status === 504 ? 'timeout' : err.status === 502 ? 'tcp_failure' : null) : null;
      if (tries.current && outcome && !res.headersSent) balancer!.health.report(tries.current.target, outcome);
      throw err;
    });
  }

  /**
   * Answers what the HTTP parser refuses (oversized headers, broken
   * framing, slow headers) in the gateway's error shape, then closes.
   */
  readonly answerClientError = (err: { code?: string }, socket: Socket): void => {
    if (!socket.writable || err.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    const [status, message] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, MESSAGES.headersTooLarge]
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, MESSAGES.requestTimeout]
          : [400, MESSAGES.badRequest];
    const requestId = this.nextRequestId();
    this.options.traffic.answered({ requestId, method: '', path: '', route: null, service: null, consumer: null }, status, performance.now(), 0);
    const { contentType, body } = renderError(message, requestId, undefined);
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${contentType}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Server: ${PRODUCT}\r\nX-Kong-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  };

  /** The gateway's own answer, through the header and log phases of the plugins that ran. */
  private sendError(
    req: DownstreamRequest,
    res: DownstreamResponse,
    error: GatewayError,
    requestId: string,
    extra: Record<string, string>,
    ctx: ProxyContext | null,
    latency: number,
  ): void {
    const redirect = error.status >= 300 && error.status < 400;
    const { contentType, body } =
      error instanceof PluginAnswer
        ? { contentType: '', body: error.body }
        : redirect
          ? { contentType: '', body: '' }
          : renderError(error.message, requestId, first(req.headers.accept));
    const headers: Record<string, string | string[]> = {
      ...extra,
      ...error.headers,
      Server: PRODUCT,
      'X-Kong-Request-Id': requestId,
      'Content-Length': String(Buffer.byteLength(body)),
    };
    if (contentType) headers['Content-Type'] = contentType;
    // A body the gateway did not read would otherwise be drained from the socket first.
    if (!req.complete) headers.Connection = 'close';
    const later = ctx && withLogPhases(ctx);
    if (ctx && later) {
      const pairs: string[] = [];
      for (const name in headers) for (const value of [headers[name]!].flat()) pairs.push(name, value);
      afterAnswer(ctx, later, error.status, pairs, latency, 0, 'kong');
      res.writeHead(error.status, pairs).end(body);
      return;
    }
    res.writeHead(error.status, headers).end(body);
  }
}

/**
 * A request matched a grpc/grpcs route. This gateway speaks HTTP/1.x only,
 * so a gRPC request (Content-Type application/grpc…) gets Kong's answer for
 * gRPC over HTTP/1.1, 426 `Please use HTTP2 protocol`; anything else gets
 * Kong's 415 `Non-gRPC request matched gRPC route`.
 */
function refuseGrpcRoute(req: DownstreamRequest): never {
  const contentType = first(req.headers['content-type']);
  if (contentType?.startsWith('application/grpc')) throw new GatewayError(426, MESSAGES.useHttp2, { Connection: 'Upgrade', Upgrade: 'HTTP/2' });
  throw new GatewayError(415, MESSAGES.nonGrpc);
}
