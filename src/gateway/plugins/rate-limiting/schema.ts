/** rate-limiting's config (Kong's kong/plugins/rate-limiting/schema.lua), with Kong's defaults. */
import type { Field, FieldError } from '../../config/schema.ts';
import { join } from '../../config/schema.ts';

export const PERIODS = ['second', 'minute', 'hour', 'day', 'month', 'year'] as const;
export type Period = (typeof PERIODS)[number];

export interface RedisConfig {
  host: string | null;
  port: number;
  timeout: number;
  username: string | null;
  password: string | null;
  database: number;
  ssl: boolean;
  ssl_verify: boolean;
  server_name: string | null;
}

export interface RateLimitingConfig extends Partial<Record<Period, number | null>> {
  limit_by: 'consumer' | 'credential' | 'ip' | 'service' | 'header' | 'path';
  header_name: string | null;
  path: string | null;
  policy: 'local' | 'redis';
  fault_tolerant: boolean;
  hide_client_headers: boolean;
  error_code: number;
  error_message: string;
  sync_rate: number;
  redis: RedisConfig;
}

const limit: Field = { type: 'number', greaterThan: 0 };

/** Kong 3.x still accepts the flat `redis_*` names (deprecated, removed in 4.0). */
const SHORTHANDS: Record<string, keyof RedisConfig> = {
  redis_host: 'host',
  redis_port: 'port',
  redis_password: 'password',
  redis_username: 'username',
  redis_ssl: 'ssl',
  redis_ssl_verify: 'ssl_verify',
  redis_server_name: 'server_name',
  redis_timeout: 'timeout',
  redis_database: 'database',
};

const redisFields: Record<string, Field> = {
  host: { type: 'string', default: null },
  port: { type: 'integer', default: 6379, between: [0, 65535] },
  timeout: { type: 'integer', default: 2000, between: [0, 2 ** 31 - 2] },
  username: { type: 'string', default: null },
  password: { type: 'string', default: null },
  database: { type: 'integer', default: 0, between: [0, 1000] },
  ssl: { type: 'boolean', default: false },
  ssl_verify: { type: 'boolean', default: false },
  server_name: { type: 'string', default: null },
};

export const rateLimitingFields: Record<string, Field> = {
  ...Object.fromEntries(PERIODS.map((p) => [p, limit])),
  limit_by: { type: 'string', default: 'consumer', oneOf: ['consumer', 'credential', 'ip', 'service', 'header', 'path'] },
  header_name: { type: 'string', default: null },
  path: { type: 'string', default: null, check: (v) => (v.startsWith('/') ? undefined : 'should start with: /') },
  policy: {
    type: 'string',
    default: 'local',
    oneOf: ['local', 'cluster', 'redis'],
    check: (v) => (v === 'cluster' ? "strategy 'cluster' is not supported with DB-less mode; use 'local' or 'redis'" : undefined),
  },
  fault_tolerant: { type: 'boolean', default: true },
  hide_client_headers: { type: 'boolean', default: false },
  error_code: {
    type: 'number',
    default: 429,
    greaterThan: 0,
    check: (v) => (Number.isInteger(v) && v >= 100 && v <= 599 ? undefined : 'expected an HTTP status code'),
  },
  error_message: { type: 'string', default: 'API rate limit exceeded' },
  sync_rate: { type: 'number', default: -1, noEffect: 'counters are always updated synchronously', asIf: -1 },
  redis: { type: 'record', default: {}, fields: redisFields },
};

/** Moves the deprecated `redis_*` shorthands into `redis` before the fields are checked. */
export function expandRedisShorthands(config: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...config };
  const redis: Record<string, unknown> = typeof config.redis === 'object' && config.redis !== null ? { ...(config.redis as object) } : {};
  let used = false;
  for (const [shorthand, field] of Object.entries(SHORTHANDS)) {
    if (shorthand in out) {
      if (out[shorthand] !== null) redis[field] = out[shorthand];
      delete out[shorthand];
      used = true;
    }
  }
  if (used) out.redis = redis;
  return out;
}

export function checkRateLimitingConfig(config: Record<string, unknown>, path: string, errors: FieldError[]): void {
  const conf = config as unknown as RateLimitingConfig;
  const set = PERIODS.filter((p) => typeof conf[p] === 'number');
  if (set.length === 0) {
    errors.push({ path, message: `at least one of these fields must be non-empty: ${PERIODS.map((p) => `'config.${p}'`).join(', ')}` });
  }
  for (let i = 1; i < set.length; i++) {
    const shorter = set[i - 1]!;
    const longer = set[i]!;
    if (conf[longer]! < conf[shorter]!) {
      errors.push({
        path,
        message: `The limit for ${longer}(${conf[longer]!.toFixed(1)}) cannot be lower than the limit for ${shorter}(${conf[shorter]!.toFixed(1)})`,
      });
    }
  }
  if (conf.policy === 'redis' && !conf.redis.host) errors.push({ path: join(path, 'redis.host'), message: "required field missing when 'policy' is 'redis'" });
  if (conf.limit_by === 'header' && !conf.header_name)
    errors.push({ path: join(path, 'header_name'), message: "required field missing when 'limit_by' is 'header'" });
  if (conf.limit_by === 'path' && !conf.path) errors.push({ path: join(path, 'path'), message: "required field missing when 'limit_by' is 'path'" });
}
