/**
 * cors (Kong PRIORITY 2000, before authentication): answers preflight
 * requests itself (200, or passes them on with `preflight_continue`), and
 * adds the CORS headers to every other answer, the service's and the
 * gateway's own (a 401 of an auth plugin too), as Kong's header_filter does.
 */
import { RE2 } from 're2-wasm';
import { PluginAnswer } from '../../errors.ts';
import { addHeader, clearHeader, setHeader } from '../headers.ts';
import { definePlugin, type RequestContext } from '../types.ts';
import { corsFields, type CorsConfig } from './schema.ts';

/** An allowed origin, compared by its normalized form or matched as an anchored regex (against the host alone when it names no port or scheme). */
type AllowedOrigin = { exact: string } | { regex: RE2; byHost: boolean };

/** `scheme://host[:port]` with the scheme's default port left out, and the host; an origin that is not a URL is kept as it is. */
function normalizeOrigin(origin: string): { domain: string; host: string } {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return { domain: origin, host: origin };
  }
  if (!url.hostname) return { domain: origin, host: origin };
  return { domain: `${url.protocol}//${url.host}`, host: url.hostname };
}

function allowedOrigins(origins: string[]): AllowedOrigin[] {
  return origins.map((entry) => {
    if (/^[A-Za-z0-9.:/-]+$/.test(entry)) return { exact: normalizeOrigin(entry).domain };
    // Kong anchors the regex at both ends (one the user anchored stays so).
    const source = `^${entry.startsWith('^') ? entry.slice(1) : entry}${entry.endsWith('$') ? '' : '$'}`;
    return { regex: new RE2(source, 'u'), byHost: !entry.includes(':') };
  });
}

export const cors = definePlugin<CorsConfig>({ name: 'cors', priority: 2000, configFields: corsFields }, (conf) => {
  const origins = conf.origins ?? [];
  const allowAll = origins.length === 0 || (origins.length === 1 && origins[0] === '*') || origins.includes('*');
  // One origin that is not a regex is sent as it is, whatever the request's.
  const single = origins.length === 1 && /^[A-Za-z0-9.:/-]+$/.test(origins[0]!) ? origins[0]! : null;
  const allowed = allowAll || single ? [] : allowedOrigins(origins);
  const methods = conf.methods.join(',');
  const exposed = conf.exposed_headers?.length ? conf.exposed_headers.join(',') : null;
  const requestOrigin = (ctx: RequestContext) => {
    const origin = ctx.clientHeaders.origin;
    return Array.isArray(origin) ? origin[0] : origin;
  };

  /** Access-Control-Allow-Origin (and Vary) for this request; whether every origin is allowed. */
  const configureOrigin = (headers: string[], origin: string | undefined, vary: (headers: string[]) => void): boolean => {
    if (allowAll && !(origins.length > 1 && origin === undefined)) {
      setHeader(headers, 'Access-Control-Allow-Origin', '*');
      return true;
    }
    vary(headers);
    if (single !== null) {
      setHeader(headers, 'Access-Control-Allow-Origin', single);
      return false;
    }
    if (origin !== undefined) {
      const normalized = normalizeOrigin(origin);
      for (const entry of allowed) {
        const found = 'exact' in entry ? entry.exact === normalized.domain : entry.regex.exec(entry.byHost ? normalized.host : normalized.domain) !== null;
        if (found) {
          setHeader(headers, 'Access-Control-Allow-Origin', normalized.domain);
          return false;
        }
      }
    }
    clearHeader(headers, 'Access-Control-Allow-Origin');
    return false;
  };
  const configureCredentials = (headers: string[], all: boolean, origin: string | undefined, vary: (headers: string[]) => void) => {
    if (!conf.credentials) return;
    if (!all) {
      setHeader(headers, 'Access-Control-Allow-Credentials', 'true');
      return;
    }
    // `*` cannot go with credentials: the request's origin is echoed instead.
    if (origin !== undefined) {
      vary(headers);
      setHeader(headers, 'Access-Control-Allow-Origin', origin);
      setHeader(headers, 'Access-Control-Allow-Credentials', 'true');
    }
  };
  const setVary = (headers: string[]) => setHeader(headers, 'Vary', 'Origin');
  const addVary = (headers: string[]) => addHeader(headers, 'Vary', 'Origin');
  const preflights = new WeakSet<RequestContext>();

  return {
    access(ctx) {
      const origin = requestOrigin(ctx);
      if (ctx.method !== 'OPTIONS' || origin === undefined || ctx.clientHeaders['access-control-request-method'] === undefined) return;
      preflights.add(ctx);
      if (conf.preflight_continue) return;
      const headers: string[] = [];
      const all = configureOrigin(headers, origin, setVary);
      configureCredentials(headers, all, origin, setVary);
      const requested = ctx.clientHeaders['access-control-request-headers'];
      if (conf.headers?.length) setHeader(headers, 'Access-Control-Allow-Headers', conf.headers.join(','));
      else if (requested !== undefined) setHeader(headers, 'Access-Control-Allow-Headers', String(requested));
      setHeader(headers, 'Access-Control-Allow-Methods', methods);
      if (conf.max_age !== null) setHeader(headers, 'Access-Control-Max-Age', String(conf.max_age));
      if (conf.private_network && ctx.clientHeaders['access-control-request-private-network'] === 'true') {
        setHeader(headers, 'Access-Control-Allow-Private-Network', 'true');
      }
      const answer: Record<string, string> = {};
      for (let i = 0; i < headers.length; i += 2) answer[headers[i]!] = headers[i + 1]!;
      throw new PluginAnswer(200, '', answer);
    },
    header(ctx, _status, headers) {
      if (preflights.has(ctx)) return;
      const origin = requestOrigin(ctx);
      if (origin === undefined && !conf.allow_origin_absent) return;
      const all = configureOrigin(headers, origin, addVary);
      configureCredentials(headers, all, origin, addVary);
      if (exposed !== null) setHeader(headers, 'Access-Control-Expose-Headers', exposed);
    },
  };
});
