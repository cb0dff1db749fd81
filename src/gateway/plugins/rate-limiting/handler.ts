/**
 * rate-limiting (Kong PRIORITY 910, after authentication): fixed windows on
 * the UTC wall clock, counted per consumer, credential, IP, header, path or
 * service, with Kong's headers and 429 answer.
 */
import { GatewayError } from '../../errors.ts';
import { definePlugin, type RequestContext } from '../types.ts';
import type { Counter, CounterResult, CounterStore } from './policies.ts';
import { RedisCounters } from './policies.ts';
import { checkRateLimitingConfig, expandRedisShorthands, PERIODS, rateLimitingFields, type Period, type RateLimitingConfig } from './schema.ts';

const HEADER_PERIOD: Record<Period, string> = { second: 'Second', minute: 'Minute', hour: 'Hour', day: 'Day', month: 'Month', year: 'Year' };

/** Start and end (ms) of the window of `period` that holds `now`, aligned like Kong's get_timestamps (UTC). */
const FIXED_PERIODS: Partial<Record<Period, number>> = { second: 1000, minute: 60_000, hour: 3_600_000, day: 86_400_000 };

function windowOf(period: Period, now: number): { start: number; end: number } {
  const size = FIXED_PERIODS[period];
  if (size !== undefined) {
    const start = Math.floor(now / size) * size;
    return { start, end: start + size };
  }
  const date = new Date(now);
  const year = date.getUTCFullYear();
  if (period === 'month') {
    return { start: Date.UTC(year, date.getUTCMonth(), 1), end: Date.UTC(year, date.getUTCMonth() + 1, 1) };
  }
  return { start: Date.UTC(year, 0, 1), end: Date.UTC(year + 1, 0, 1) };
}

/** One counter per configured window, for the requests of `identifier` on a route and service. */
export function windowCounters(
  conf: RateLimitingConfig,
  periods: readonly Period[],
  routeId: string,
  serviceId: string,
  identifier: string,
  now: number,
): Counter[] {
  const counters: Counter[] = [];
  for (const period of periods) {
    const window = windowOf(period, now);
    counters.push({ key: `ratelimit:${routeId}:${serviceId}:${identifier}:${window.start}:${period}`, limit: conf[period]!, expiresAt: window.end });
  }
  return counters;
}

/** The configured windows, shortest first. */
export function configuredPeriods(conf: RateLimitingConfig): Period[] {
  return PERIODS.filter((p) => typeof conf[p] === 'number');
}

/** Kong's get_identifier: what the counters are kept per; every fallback ends at the client IP. */
function identifierOf(ctx: RequestContext, conf: RateLimitingConfig): string {
  let id: string | undefined;
  switch (conf.limit_by) {
    case 'consumer':
      id = ctx.consumer?.id ?? ctx.credential?.id;
      break;
    case 'credential':
      id = ctx.credential?.id;
      break;
    case 'service':
      id = ctx.service.id;
      break;
    case 'header': {
      const value = ctx.clientHeaders[conf.header_name!.toLowerCase()];
      id = Array.isArray(value) ? value.join(', ') : value;
      break;
    }
    case 'path':
      if (ctx.path === conf.path) id = ctx.path;
      break;
    case 'ip':
      break;
  }
  return id ?? ctx.forwardedIp;
}

/** A window's two header names, made once per plugin instance. */
interface WindowHeaders {
  limit: string;
  remaining: string;
}

function windowHeaders(period: Period): WindowHeaders {
  return { limit: `X-RateLimit-Limit-${HEADER_PERIOD[period]}`, remaining: `X-RateLimit-Remaining-${HEADER_PERIOD[period]}` };
}

/**
 * Kong's client headers, written into `into`: every configured window's
 * limit and remaining, and the IETF-draft RateLimit-* trio for the most
 * restrictive one. Returns RateLimit-Reset (also Retry-After's value).
 */
function rateLimitHeaders(into: Record<string, string>, names: WindowHeaders[], counters: Counter[], result: CounterResult, now: number): string {
  let chosen = -1;
  let chosenRemaining = Infinity;
  for (let i = 0; i < names.length; i++) {
    const limit = counters[i]!.limit;
    // A request that passed used one from every window; one that was refused counted nowhere.
    const used = result.usage[i]! + (result.allowed ? 1 : 0);
    const remaining = Math.max(0, limit - used);
    if (chosen < 0 || remaining < chosenRemaining || (remaining === chosenRemaining && limit > counters[chosen]!.limit)) {
      chosen = i;
      chosenRemaining = remaining;
    }
    into[names[i]!.limit] = String(limit);
    into[names[i]!.remaining] = String(remaining);
  }
  const reset = String(Math.max(1, Math.ceil((counters[chosen]!.expiresAt - now) / 1000)));
  into['RateLimit-Limit'] = String(counters[chosen]!.limit);
  into['RateLimit-Remaining'] = String(chosenRemaining);
  into['RateLimit-Reset'] = reset;
  return reset;
}

/** Puts the headers on the answer (straight into the response's headers: no object per request), and refuses the request when a window is full. */
function apply(ctx: RequestContext, conf: RateLimitingConfig, names: WindowHeaders[], counters: Counter[], result: CounterResult, now: number): void {
  if (!conf.hide_client_headers) {
    const reset = rateLimitHeaders(ctx.responseHeaders, names, counters, result, now);
    // Like Kong, Retry-After goes with the other client headers and is hidden with them.
    if (!result.allowed) throw new GatewayError(conf.error_code, conf.error_message, { 'Retry-After': reset });
  } else if (!result.allowed) throw new GatewayError(conf.error_code, conf.error_message);
}

export const rateLimiting = definePlugin<RateLimitingConfig>(
  { name: 'rate-limiting', priority: 910, configFields: rateLimitingFields, expandShorthands: expandRedisShorthands, checkConfig: checkRateLimitingConfig },
  (conf, env) => {
    const periods = configuredPeriods(conf);
    const names = periods.map(windowHeaders);
    const store: CounterStore = conf.policy === 'redis' ? env.counters.redis(conf.redis) : env.counters.local;
    const storeFailed = (err: unknown) => {
      if (store instanceof RedisCounters) store.noteFailure(err);
      if (!conf.fault_tolerant) throw new GatewayError(500, 'An unexpected error occurred');
    };
    return {
      access(ctx) {
        const now = Date.now();
        const counters = windowCounters(conf, periods, ctx.route.id, ctx.service.id, identifierOf(ctx, conf), now);
        let pending: CounterResult | Promise<CounterResult>;
        try {
          pending = store.checkAndIncrement(counters);
        } catch (err) {
          return storeFailed(err);
        }
        // The local store answers at once; only Redis makes the request wait.
        if (pending instanceof Promise) return pending.then((result) => apply(ctx, conf, names, counters, result, now), storeFailed);
        apply(ctx, conf, names, counters, pending, now);
      },
    };
  },
);
