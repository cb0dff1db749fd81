/**
 * Kong's log serializer (`kong.log.serialize`), what every logging plugin
 * (file-log, http-log) writes for one request: the request as received,
 * the URI sent upstream, the answer's status, headers and size, Kong's
 * three latencies, the route, service and consumer entities, the client
 * address and when the request started.
 */
import type { AnswerLog, RequestContext } from './types.ts';

/** Headers whose values are credentials: Kong logs them as `REDACTED`. */
const REDACTED = new Set(['authorization', 'proxy-authorization']);

function decode(text: string): string {
  try {
    return decodeURIComponent(text.replaceAll('+', ' '));
  } catch {
    return text;
  }
}

/** Query arguments as Kong's `kong.request.get_query()` gives them: repeats as lists, a bare name as `true`. */
function queryArguments(query: string): Record<string, string | boolean | (string | boolean)[]> {
  const out: Record<string, string | boolean | (string | boolean)[]> = {};
  if (query === '') return out;
  for (const part of query.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const name = decode(eq < 0 ? part : part.slice(0, eq));
    const value: string | boolean = eq < 0 ? true : decode(part.slice(eq + 1));
    const existing = out[name];
    out[name] = existing === undefined ? value : Array.isArray(existing) ? [...existing, value] : [existing, value];
  }
  return out;
}

/** Name/value pairs as one object with lower-case names, repeated headers as lists. */
function headerObject(pairs: readonly string[]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (let i = 0; i < pairs.length; i += 2) {
    const name = pairs[i]!.toLowerCase();
    const value = pairs[i + 1]!;
    const existing = out[name];
    out[name] = existing === undefined ? value : Array.isArray(existing) ? [...existing, value] : [existing, value];
  }
  return out;
}

function requestHeaders(ctx: RequestContext): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(ctx.clientHeaders)) {
    if (value !== undefined) out[name] = REDACTED.has(name) ? 'REDACTED' : value;
  }
  return out;
}

/** One request's log entry, in Kong's shape. */
export function serializeLog(ctx: RequestContext, entry: AnswerLog): Record<string, unknown> {
  const target = ctx.requestTarget();
  const host = (ctx.clientHeaders.host ?? '').replace(/:\d+$/, '') || 'localhost';
  const proxied = entry.source === 'service';
  const log: Record<string, unknown> = {
    request: {
      id: ctx.requestId,
      uri: target,
      url: `${ctx.scheme}://${host}:${ctx.serverPort()}${target}`,
      querystring: queryArguments(ctx.query),
      method: ctx.method,
      headers: requestHeaders(ctx),
      size: entry.requestSize,
    },
    upstream_uri: ctx.upstreamUri ?? '',
    response: { status: entry.status, headers: headerObject(entry.headers), size: entry.responseSize },
    latencies: {
      kong: Math.round(entry.latency - entry.upstreamLatency),
      proxy: proxied ? Math.round(entry.upstreamLatency) : -1,
      request: Math.round(entry.latency),
      receive: 0,
    },
    route: ctx.route,
    service: ctx.service,
    client_ip: ctx.forwardedIp,
    started_at: Math.round(Date.now() - entry.latency),
    workspace_name: 'default',
    source: proxied ? 'upstream' : 'kong',
  };
  if (proxied) log.upstream_status = String(entry.status);
  if (ctx.consumer) log.consumer = ctx.consumer;
  if (ctx.credential) log.authenticated_entity = { id: ctx.credential.id, consumer_id: ctx.credential.consumer.id };
  return log;
}
