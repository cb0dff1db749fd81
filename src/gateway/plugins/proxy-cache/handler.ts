/**
 * proxy-cache (Kong PRIORITY 100), memory strategy: answers a request from
 * the cache when a fresh answer to the same request (the same cache key) is
 * stored, else passes it on and stores the service's answer when its status
 * and Content-Type are among the cacheable ones. Every answer says what
 * happened in `X-Cache-Status` (Miss, Hit, Refresh for a stale entry,
 * Bypass for a request or answer that is not cacheable), with `X-Cache-Key`
 * and, on a hit, `Age`. With `cache_control`, the request's and answer's
 * Cache-Control directives are honoured as Kong's handler honours them.
 * Time is whole seconds, as nginx's `ngx.time()`.
 */
import type { Field } from '../../config/schema.ts';
import { PluginAnswer } from '../../errors.ts';
import { setHeader } from '../headers.ts';
import { definePlugin, type RequestContext } from '../types.ts';
import { contentTypeAccepted, mediaTypes, parseDirectives, resourceTtl, seconds, type Directives } from './cache-control.ts';
import { buildCacheKey, type CacheKeyConfig } from './cache-key.ts';
import type { CachedAnswer } from './memory-strategy.ts';

type DiagnosticHeader = 'age' | 'X-Cache-Status' | 'X-Cache-Key';

interface ProxyCacheConfig extends CacheKeyConfig {
  response_code: number[];
  request_method: string[];
  content_type: string[];
  cache_ttl: number;
  strategy: 'memory';
  cache_control: boolean;
  storage_ttl: number | null;
  memory: { dictionary_name: string };
  response_headers: Record<DiagnosticHeader, boolean>;
}

const strings: Field = { type: 'array', elements: { type: 'string' } };
const flag: Field = { type: 'boolean', default: true };

const proxyCacheFields: Record<string, Field> = {
  response_code: {
    type: 'array',
    default: [200, 301, 404],
    elements: { type: 'integer', between: [100, 900] },
    check: (v) => (v.length === 0 ? 'length must be at least 1' : undefined),
  },
  request_method: { type: 'array', default: ['GET', 'HEAD'], elements: { type: 'string', oneOf: ['HEAD', 'GET', 'POST', 'PATCH', 'PUT'] } },
  content_type: { type: 'array', default: ['text/plain', 'application/json'], elements: { type: 'string' } },
  cache_ttl: { type: 'integer', default: 300, check: (v) => (v > 0 ? undefined : 'value must be greater than 0') },
  strategy: { type: 'string', required: true, oneOf: ['memory'] },
  cache_control: { type: 'boolean', default: false },
  ignore_uri_case: { type: 'boolean', default: false },
  storage_ttl: { type: 'integer', default: null },
  memory: { type: 'record', default: {}, fields: { dictionary_name: { type: 'string', default: 'kong_db_cache' } } },
  vary_query_params: { ...strings, default: null },
  vary_headers: { ...strings, default: null },
  response_headers: { type: 'record', default: {}, fields: { age: flag, 'X-Cache-Status': flag, 'X-Cache-Key': flag } },
};

/**
 * Headers a stored answer does not keep: hop-by-hop ones and its length
 * (Kong's list), the cache's own, and those the gateway gives every answer
 * afresh (request id, latencies, Server).
 */
const NOT_STORED = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailers',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'age',
  'x-cache-status',
  'x-cache-key',
  'x-kong-request-id',
  'x-kong-upstream-latency',
  'x-kong-proxy-latency',
  'server',
]);

/** The headers a stored answer keeps, grouped by name (Kong also leaves out any *ratelimit-remaining*: it is per request). */
function storedHeaders(headers: readonly string[]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!;
    const lower = name.toLowerCase();
    if (NOT_STORED.has(lower) || lower.includes('ratelimit-remaining')) continue;
    const found = out[name];
    out[name] = found === undefined ? headers[i + 1]! : [found, headers[i + 1]!].flat();
  }
  return out;
}

/** Every value of a header among name/value pairs. */
function valuesOf(headers: readonly string[], lowerCaseName: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < headers.length; i += 2) if (headers[i]!.toLowerCase() === lowerCaseName) values.push(headers[i + 1]!);
  return values;
}

const NO_DIRECTIVES: Directives = new Map();

/** A request whose answer may be stored: its key, and once its head was found cacheable, the answer's lifetime. */
interface Pending {
  key: string;
  ttl: number | null;
}

export const proxyCache = definePlugin<ProxyCacheConfig>({ name: 'proxy-cache', priority: 100, configFields: proxyCacheFields }, (conf, env) => {
  const dictionary = env.dictionaries.get(conf.memory.dictionary_name);
  const accepted = mediaTypes(conf.content_type);
  const pending = new WeakMap<RequestContext, Pending>();
  const nowSeconds = () => Math.floor(env.clock() / 1000);
  // Kong's diagnostic headers, each behind its switch; a request with a Kong-Debug header gets them all.
  const shows = (ctx: RequestContext, header: DiagnosticHeader) => conf.response_headers[header] || ctx.clientHeaders['kong-debug'] !== undefined;
  const requestDirectives = (ctx: RequestContext) => (conf.cache_control ? parseDirectives(ctx.headerValues('cache-control').join(', ')) : NO_DIRECTIVES);

  function cacheableRequest(ctx: RequestContext, cc: Directives): boolean {
    return conf.request_method.includes(ctx.method) && !(conf.cache_control && (cc.has('no-store') || cc.has('no-cache')));
  }

  /** Kong's freshness checks on a stored answer: the client's limits with cache_control, else cache_ttl. */
  function stale(answer: CachedAnswer, cc: Directives): boolean {
    const age = nowSeconds() - answer.timestamp;
    if (!conf.cache_control) return age > conf.cache_ttl;
    const maxAge = seconds(cc, 'max-age');
    const maxStale = seconds(cc, 'max-stale');
    const minFresh = seconds(cc, 'min-fresh');
    return (
      (maxAge !== undefined && age > maxAge) ||
      (maxStale !== undefined && age - answer.ttl > maxStale) ||
      (minFresh !== undefined && answer.ttl - age < minFresh)
    );
  }

  /** The answer's lifetime when it may be stored (Kong's cacheable_response), else null. */
  function answerTtl(status: number, headers: readonly string[]): number | null {
    if (!conf.response_code.includes(status)) return null;
    const contentType = valuesOf(headers, 'content-type');
    if (contentType.length !== 1 || !contentTypeAccepted(contentType[0]!, accepted)) return null;
    if (!conf.cache_control) return conf.cache_ttl;
    const cc = parseDirectives(valuesOf(headers, 'cache-control').join(', '));
    if (cc.has('private') || cc.has('no-store') || cc.has('no-cache')) return null;
    const ttl = resourceTtl(cc, valuesOf(headers, 'expires').at(-1), nowSeconds());
    return ttl > 0 ? ttl : null;
  }

  function hit(ctx: RequestContext, key: string, answer: CachedAnswer): PluginAnswer {
    const headers = { ...answer.headers };
    if (shows(ctx, 'age')) headers.Age = String(nowSeconds() - answer.timestamp);
    if (shows(ctx, 'X-Cache-Status')) headers['X-Cache-Status'] = 'Hit';
    if (shows(ctx, 'X-Cache-Key')) headers['X-Cache-Key'] = key;
    return new PluginAnswer(answer.status, answer.body, headers);
  }

  return {
    access(ctx) {
      const cc = requestDirectives(ctx);
      const status = (value: string) => {
        if (shows(ctx, 'X-Cache-Status')) ctx.responseHeaders['X-Cache-Status'] = value;
      };
      if (!cacheableRequest(ctx, cc)) return status('Bypass');
      const key = buildCacheKey(ctx, conf);
      if (shows(ctx, 'X-Cache-Key')) ctx.responseHeaders['X-Cache-Key'] = key;
      const stored = dictionary.fetch(key, env.clock());
      if (stored === undefined && conf.cache_control && cc.has('only-if-cached')) throw new PluginAnswer(504, '');
      if (stored !== undefined && !stale(stored, cc)) throw hit(ctx, key, stored);
      pending.set(ctx, { key, ttl: null });
      status(stored === undefined ? 'Miss' : 'Refresh');
    },
    header(ctx, status, headers) {
      const request = pending.get(ctx);
      if (!request) return;
      request.ttl = answerTtl(status, headers);
      if (request.ttl !== null) return;
      pending.delete(ctx);
      if (shows(ctx, 'X-Cache-Status')) setHeader(headers, 'X-Cache-Status', 'Bypass');
    },
    body(ctx, status, headers, body) {
      const request = pending.get(ctx);
      if (!request || request.ttl === null) return body;
      pending.delete(ctx);
      const now = env.clock();
      const answer: CachedAnswer = { status, headers: storedHeaders(headers), body, timestamp: Math.floor(now / 1000), ttl: request.ttl };
      dictionary.store(request.key, answer, conf.storage_ttl ?? request.ttl, now);
      return body;
    },
  };
});
