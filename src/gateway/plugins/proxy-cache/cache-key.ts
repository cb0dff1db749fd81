/**
 * proxy-cache's cache key, built as Kong 3.x builds it: the SHA-256 (hex)
 * of `prefix|method|uri|params|headers`, where
 * - prefix is `consumer_id:route_id`, or the route id alone;
 * - uri is nginx's request line with everything from the first `?` cut
 *   (so `GET /a?x=1 HTTP/1.1` gives `GET /a`, and `GET /a HTTP/1.1` stays
 *   whole), lower-cased with `ignore_uri_case`;
 * - params are the query's arguments (those of `vary_query_params`, or all
 *   of them in sorted order) and headers those of `vary_headers` (none by
 *   default), each `name=value` (repeated values sorted and joined by `,`,
 *   a bare `name` for an argument without `=`), joined by `:`.
 */
import { createHash } from 'node:crypto';
import type { RequestContext } from '../types.ts';

/** A query argument's value as nginx parses it: `true` for a bare name, a list when repeated. */
type ArgValue = string | true | (string | true)[];

/** Kong's limit on the query arguments it reads (kong.request.get_query's default). */
const MAX_ARGS = 100;

function unescape(text: string): string {
  const spaced = text.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced; // nginx leaves a broken escape as it is
  }
}

/** The query's arguments as nginx's ngx.req.get_uri_args gives them. */
function queryArgs(query: string): Map<string, ArgValue> {
  const args = new Map<string, ArgValue>();
  let count = 0;
  for (const part of query.split('&')) {
    if (part === '' || count++ >= MAX_ARGS) continue;
    const eq = part.indexOf('=');
    const name = unescape(eq < 0 ? part : part.slice(0, eq));
    if (name === '') continue;
    const value: string | true = eq < 0 ? true : unescape(part.slice(eq + 1));
    const found = args.get(name);
    args.set(name, found === undefined ? value : Array.isArray(found) ? [...found, value] : [found, value]);
  }
  return args;
}

/** `name=value` for each of `names` present, joined by `:` (Kong's generate_key_from). */
function keyFrom(names: readonly string[], valueOf: (name: string) => ArgValue | undefined): string {
  const parts: string[] = [];
  for (const name of names) {
    const value = valueOf(name);
    if (value === undefined) continue;
    if (Array.isArray(value))
      parts.push(
        `${name}=${value
          .map((v) => (v === true ? '' : v))
          .sort()
          .join(',')}`,
      );
    else parts.push(value === true ? name : `${name}=${value}`);
  }
  return parts.join(':');
}

export interface CacheKeyConfig {
  ignore_uri_case: boolean;
  vary_query_params: string[] | null;
  vary_headers: string[] | null;
}

export function buildCacheKey(ctx: RequestContext, conf: CacheKeyConfig): string {
  const route = ctx.route.id;
  const prefix = ctx.consumer ? `${ctx.consumer.id}:${route}` : route;
  const requestLine = `${ctx.method} ${ctx.requestTarget()} HTTP/${ctx.httpVersion()}`;
  const query = requestLine.indexOf('?');
  const uri = query < 0 ? requestLine : requestLine.slice(0, query);
  const args = queryArgs(ctx.query);
  const params = keyFrom(conf.vary_query_params?.length ? conf.vary_query_params : [...args.keys()].sort(), (name) => args.get(name));
  const headers = conf.vary_headers?.length
    ? keyFrom(conf.vary_headers, (name) => {
        // nginx finds a header by its name in any case, with `_` for `-`.
        const values = ctx.headerValues(name.toLowerCase().replace(/_/g, '-'));
        return values.length === 0 ? undefined : values.length === 1 ? values[0] : values;
      })
    : '';
  const text = `${prefix}|${ctx.method}|${conf.ignore_uri_case ? uri.toLowerCase() : uri}|${params}|${headers}`;
  return createHash('sha256').update(text).digest('hex');
}
