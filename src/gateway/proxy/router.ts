/**
 * Route matching as Kong's traditional router does it, and the upstream
 * path rules of Kong's path_handling v0 (kong/router/utils.lua).
 */
import { GatewayError, MESSAGES } from '../errors.ts';
import type { Route, Service } from '../config/model.ts';
import { compileRoutePattern, type RoutePattern } from '../config/route-regex.ts';
import type { PluginSlot } from '../plugins/types.ts';
import { hostHeader, type Balancer } from './balancer.ts';

export interface RouteCandidate {
  route: Route;
  service: Service;
  /** A plain prefix path, a regex path, or neither (the route has no paths). */
  prefix: string | null;
  regex: RoutePattern | null;
  methods: ReadonlySet<string> | null;
  hosts: { exact: ReadonlySet<string>; wildcards: RegExp[] } | null;
  headers: [string, ReadonlySet<string>][] | null;
  plugins: PluginSlot[];
  /** The service's balancer when its host names an upstream. */
  balancer: Balancer | null;
  /** The Host header for the service's own origin (unless the client's is preserved or a balancer picks a target). */
  hostHeader: string;
}

export interface RouteMatch {
  candidate: RouteCandidate;
  /** The part of the path the route matched (what strip_path removes). */
  matched: string;
}

export interface MatchInput {
  method: string;
  /** The Host header (may carry a port). */
  host: string | undefined;
  path: string;
  headers: NodeJS.Dict<string | string[]>;
}

// Kong's match-rule bits: a host criterion outranks a header, a header a path, a path a method.
const HOST = 8;
const HEADER = 4;
const URI = 2;
const METHOD = 1;

function bitCount(n: number): number {
  let count = 0;
  for (let v = n; v; v &= v - 1) count++;
  return count;
}

function hostMatcher(hosts: string[]): RouteCandidate['hosts'] {
  const exact = new Set<string>();
  const wildcards: RegExp[] = [];
  for (const host of hosts.map((h) => h.toLowerCase())) {
    if (!host.includes('*')) exact.add(host);
    else {
      const pattern = host.replace(/[.]/g, '\\.').replace('*', '[^:]+');
      wildcards.push(new RegExp(host.includes(':') ? `^${pattern}$` : `^${pattern}(?::\\d+)?$`));
    }
  }
  return { exact, wildcards };
}

/** A Host header without its port (`[::1]:8000` → `[::1]`). */
export function withoutPort(host: string): string {
  const colon = host.lastIndexOf(':');
  if (colon < 0 || colon < host.lastIndexOf(']')) return host;
  for (let i = colon + 1; i < host.length; i++) {
    const c = host.charCodeAt(i);
    if (c < 48 || c > 57) return host;
  }
  return host.slice(0, colon);
}

function hostMatches(matcher: NonNullable<RouteCandidate['hosts']>, host: string | undefined): boolean {
  if (!host) return false;
  const full = host.toLowerCase();
  const bare = withoutPort(full);
  return matcher.exact.has(bare) || matcher.exact.has(full) || matcher.wildcards.some((w) => w.test(full));
}

/**
 * One candidate per route path, sorted like Kong's sort_routes: more kinds
 * of criteria first; exact hosts before wildcard hosts; then regex paths
 * before plain ones; more headers; higher regex_priority; longer plain
 * paths; then the order of the file.
 */
export function compileRoutes(routes: { route: Route; service: Service; plugins: PluginSlot[]; balancer: Balancer | null }[]): RouteCandidate[] {
  const rows: { candidate: RouteCandidate; bits: number; order: number }[] = [];
  routes.forEach(({ route, service, plugins, balancer }, order) => {
    const bits =
      (route.hosts?.length ? HOST : 0) |
      (route.headers && Object.keys(route.headers).length ? HEADER : 0) |
      (route.paths?.length ? URI : 0) |
      (route.methods?.length ? METHOD : 0);
    const base = {
      route,
      service,
      methods: route.methods?.length ? new Set(route.methods) : null,
      hosts: route.hosts?.length ? hostMatcher(route.hosts) : null,
      headers:
        route.headers && Object.keys(route.headers).length
          ? Object.entries(route.headers).map(([name, values]): [string, ReadonlySet<string>] => [
              name.toLowerCase(),
              new Set(values.map((v) => v.toLowerCase())),
            ])
          : null,
      plugins,
      balancer,
      hostHeader: hostHeader(service.host, service.port, service.protocol),
    };
    const paths = route.paths?.length ? route.paths : [null];
    for (const path of paths) {
      const regex = path?.startsWith('~') ? compileRoutePattern(path.slice(1)) : null;
      rows.push({ candidate: { ...base, prefix: regex ? null : path, regex }, bits, order });
    }
  });
  rows.sort((a, b) => {
    const ca = a.candidate;
    const cb = b.candidate;
    return (
      bitCount(b.bits) - bitCount(a.bits) ||
      b.bits - a.bits ||
      Number(plainHostsOnly(cb)) - Number(plainHostsOnly(ca)) ||
      Number(cb.regex !== null) - Number(ca.regex !== null) ||
      (cb.headers?.length ?? 0) - (ca.headers?.length ?? 0) ||
      (ca.regex && cb.regex ? cb.route.regex_priority - ca.route.regex_priority : 0) ||
      (cb.prefix?.length ?? 0) - (ca.prefix?.length ?? 0) ||
      a.order - b.order
    );
  });
  return rows.map((r) => r.candidate);
}

/** Kong's "plain host only" bit: exact host names outrank wildcards. */
function plainHostsOnly(candidate: RouteCandidate): boolean {
  return candidate.hosts !== null && candidate.hosts.wildcards.length === 0;
}

function headerMatches(wanted: [string, ReadonlySet<string>][], headers: MatchInput['headers']): boolean {
  return wanted.every(([name, values]) => {
    const got = headers[name];
    if (got === undefined) return false;
    return (Array.isArray(got) ? got : [got]).some((v) => values.has(v.toLowerCase()));
  });
}

/**
 * Whether one candidate takes the request: the part of the path it matched,
 * or null. Methods and hosts are criteria, so a miss is a 404, not a 405.
 * `prefixChecked` skips the plain path comparison (the route table's prefix
 * tree has made it).
 */
export function matchCandidate(candidate: RouteCandidate, input: MatchInput, prefixChecked = false): string | null {
  if (candidate.methods && !candidate.methods.has(input.method)) return null;
  if (candidate.hosts && !hostMatches(candidate.hosts, input.host)) return null;
  if (candidate.headers && !headerMatches(candidate.headers, input.headers)) return null;
  if (candidate.prefix !== null) {
    // A plain path is a string prefix, not a segment prefix: /users also matches /usersX (Kong/kong#6585).
    return prefixChecked || input.path.startsWith(candidate.prefix) ? candidate.prefix : null;
  }
  if (candidate.regex) return candidate.regex.matchedPrefix(input.path);
  return '/';
}

/** Kong's get_upstream_uri_v0: joins the service path and what is left of the request path. */
export function upstreamPath(route: Route, servicePath: string | null, requestPath: string, matched: string): string {
  const base = servicePath ?? '/';
  if (!route.strip_path) {
    if (base.endsWith('/')) return base + requestPath.slice(1);
    return requestPath === '/' ? base : base + requestPath;
  }
  const rest = requestPath.slice(matched.length);
  if (base.endsWith('/')) {
    if (rest === '') {
      if (base === '/') return '/';
      return requestPath.endsWith('/') ? base : base.slice(0, -1);
    }
    return rest.startsWith('/') ? base.slice(0, -1) + rest : base + rest;
  }
  if (rest === '') return requestPath.length > 1 && requestPath.endsWith('/') ? `${base}/` : base;
  return rest.startsWith('/') ? base + rest : `${base}/${rest}`;
}

const UNRESERVED = /[A-Za-z0-9\-._~]/;

/**
 * The path routes match against, as nginx and Kong normalize it: percent
 * escapes of unreserved characters decoded, repeated slashes merged, dot
 * segments resolved. Escaped slashes, backslashes and NUL are refused rather
 * than passed on, so no upstream can be led out of the prefix it was given.
 */
export function normalizePath(raw: string): string {
  if (!raw.startsWith('/')) throw new GatewayError(400, MESSAGES.badRequest);
  // The common case has nothing to decode, merge or resolve.
  if (!/%|\/\/|\/\.(?:\.)?(?:\/|$)/.test(raw)) return raw;
  const decoded = raw.replace(/%(..)?/g, (escape, hex: string | undefined) => {
    if (!hex || !/^[0-9A-Fa-f]{2}$/.test(hex)) throw new GatewayError(400, MESSAGES.badRequest);
    const code = parseInt(hex, 16);
    if (code === 0x2f || code === 0x5c || code === 0) throw new GatewayError(400, MESSAGES.badRequest);
    const char = String.fromCharCode(code);
    return UNRESERVED.test(char) ? char : escape.toUpperCase();
  });
  const out: string[] = [];
  const segments = decoded.split('/');
  segments.forEach((segment, i) => {
    const last = i === segments.length - 1;
    if (segment === '.' || (segment === '' && i > 0 && !last)) {
      if (last) out.push('');
      return;
    }
    if (segment === '..') {
      if (out.length <= 1) throw new GatewayError(400, MESSAGES.badRequest);
      out.pop();
      if (last) out.push('');
      return;
    }
    out.push(segment);
  });
  return out.join('/') || '/';
}
