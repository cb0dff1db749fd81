/**
 * A consumer's rate-limit state, for the admin API (Kong has no such call):
 * on each route where a rate-limiting instance counts that consumer's
 * requests, each configured window's limit, what was used and when it
 * resets. The counters are read where the plugin keeps them (this process's
 * table, or Redis) and nothing is counted.
 */
import type { Consumer } from '../../config/model.ts';
import { GatewayError } from '../../errors.ts';
import type { LoadedConfig } from '../../proxy/compile.ts';
import { pluginFor } from '../types.ts';
import { configuredPeriods, windowCounters } from './handler.ts';
import type { CounterStores } from './policies.ts';
import type { Period, RateLimitingConfig } from './schema.ts';

export interface RateLimitWindow {
  plugin: { id: string };
  route: { id: string; name: string | null };
  service: { id: string; name: string | null };
  policy: 'local' | 'redis';
  limit_by: 'consumer' | 'credential' | 'service';
  /** The key-auth credential counted (limit_by credential), else null. */
  credential: { id: string } | null;
  period: Period;
  limit: number;
  used: number;
  remaining: number;
  /** When the window ends and the count starts again (ISO 8601). */
  window_end: string;
  /** Seconds until then, as RateLimit-Reset gives them. */
  reset: number;
}

/** What one instance counts this consumer's requests by on a route: the identifiers, with the credential each stands for. */
function countedAs(conf: RateLimitingConfig, consumer: Consumer, credentials: string[], identified: boolean, serviceId: string) {
  switch (conf.limit_by) {
    case 'consumer':
      return identified ? [{ identifier: consumer.id, credential: null }] : [];
    case 'credential':
      return identified ? credentials.map((id) => ({ identifier: id, credential: { id } })) : [];
    case 'service':
      return [{ identifier: serviceId, credential: null }];
    default:
      // By IP, header or path: those counters are not a consumer's.
      return [];
  }
}

export async function consumerRateLimits(config: LoadedConfig, consumer: Consumer, counters: CounterStores, now = Date.now()): Promise<RateLimitWindow[]> {
  const credentials = config.entities.keyauth_credentials.filter((c) => c.consumer.id === consumer.id).map((c) => c.id);
  const windows: RateLimitWindow[] = [];
  const seen = new Set<string>();
  // One candidate per route path: each route once, in matching order.
  for (const { route, service, plugins } of config.candidates) {
    if (seen.has(route.id)) continue;
    seen.add(route.id);
    const slot = plugins.find((s) => s.name === 'rate-limiting');
    const instance = slot && pluginFor(slot, consumer);
    if (!instance) continue;
    // Without an authentication plugin on the route the consumer is never known there: its requests count by IP.
    const identified = plugins.some((s) => s.name === 'key-auth');
    const conf = instance.entity.config as unknown as RateLimitingConfig;
    const periods = configuredPeriods(conf);
    for (const { identifier, credential } of countedAs(conf, consumer, credentials, identified, service.id)) {
      const windowsOf = windowCounters(conf, periods, route.id, service.id, identifier, now);
      let usage: number[];
      try {
        usage = await counters.reader(conf.policy, conf.redis).usage(windowsOf);
      } catch (err) {
        throw new GatewayError(503, `cannot read the rate-limit counters of plugin ${instance.entity.id} from Redis: ${(err as Error).message}`);
      }
      windowsOf.forEach((counter, i) => {
        windows.push({
          plugin: { id: instance.entity.id },
          route: { id: route.id, name: route.name },
          service: { id: service.id, name: service.name },
          policy: conf.policy,
          limit_by: conf.limit_by as RateLimitWindow['limit_by'],
          credential,
          period: periods[i]!,
          limit: counter.limit,
          used: usage[i]!,
          remaining: Math.max(0, counter.limit - usage[i]!),
          window_end: new Date(counter.expiresAt).toISOString(),
          reset: Math.max(1, Math.ceil((counter.expiresAt - now) / 1000)),
        });
      });
    }
  }
  return windows;
}
