/**
 * Kong 3.x entity schemas (services, routes, consumers, key-auth
 * credentials, plugins) with Kong's defaults. Fields Kong has but this
 * gateway does not act on are refused by name rather than silently ignored.
 */
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { compileRoutePattern } from './route-regex.ts';
import { unsupported, type ArrayField, type Field, type IntegerField, type NumberField, type StringField } from './schema.ts';

const MAX_TIMEOUT = 2 ** 31 - 2;

const idField: StringField = {
  type: 'string',
  check: (v) => (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v) ? undefined : 'expected a valid UUID'),
};
const nameField: StringField = {
  type: 'string',
  check: (v) => (/^[A-Za-z0-9.\-_~]+$/.test(v) ? undefined : 'invalid value; the name may only contain letters, digits, ".", "-", "_" and "~"'),
};
const stringArray = (extra?: Partial<ArrayField>): ArrayField => ({ type: 'array', elements: { type: 'string' }, ...extra });
const timestamp: Field = { type: 'integer', between: [0, Number.MAX_SAFE_INTEGER] };
/** A reference to another entity: its name or id, or `{ id }` / `{ name }`. */
const foreignKey: Field = {
  type: 'any',
  check: (v) => {
    if (typeof v === 'string') return undefined;
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
      const keys = Object.keys(v);
      const value = (v as Record<string, unknown>)[keys[0] ?? ''];
      if (keys.length === 1 && (keys[0] === 'id' || keys[0] === 'name' || keys[0] === 'username') && typeof value === 'string') return undefined;
    }
    return 'expected the name or id of an entity';
  },
};
const common = { id: idField, tags: stringArray(), created_at: timestamp, updated_at: timestamp } satisfies Record<string, Field>;

const timeout = (): Field => ({ type: 'integer', default: 60000, between: [1, MAX_TIMEOUT] });

export const serviceFields: Record<string, Field> = {
  ...common,
  name: nameField,
  url: { type: 'string' },
  protocol: { type: 'string', default: 'http', oneOf: ['http', 'https'] },
  host: { type: 'string', check: (v) => (/^[A-Za-z0-9.\-_[\]:]+$/.test(v) ? undefined : 'invalid hostname') },
  port: { type: 'integer', between: [0, 65535] },
  path: { type: 'string', check: (v) => (v.startsWith('/') ? undefined : 'should start with: /') },
  retries: { type: 'integer', default: 5, between: [0, 32767] },
  connect_timeout: timeout(),
  write_timeout: timeout(),
  read_timeout: timeout(),
  enabled: { type: 'boolean', default: true },
  tls_verify: { type: 'boolean' },
  tls_verify_depth: unsupported('upstream certificate chain depth'),
  client_certificate: unsupported('upstream client certificates'),
  ca_certificates: unsupported('upstream CA certificates; the system store and NODE_EXTRA_CA_CERTS are used'),
};

const pathField: StringField = {
  type: 'string',
  check: (v) => {
    if (v.startsWith('~')) {
      // JavaScript's syntax first (its messages are the clearer ones), then what RE2 can run in linear time.
      try {
        new RegExp(`^${v.slice(1)}`);
        compileRoutePattern(v.slice(1));
      } catch (err) {
        return `invalid regex: ${(err as Error).message}`;
      }
      return v.startsWith('~/') ? undefined : 'should start with: / (fixed path) or ~/ (regex path)';
    }
    return v.startsWith('/') ? undefined : 'should start with: / (fixed path) or ~/ (regex path)';
  },
};

/** Kong's route protocol sets are mutually exclusive: http/https or grpc/grpcs (stream ones are not offered). */
function protocolSets(protocols: unknown[]): string | undefined {
  const grpc = protocols.some((p) => p === 'grpc' || p === 'grpcs');
  const http = protocols.some((p) => p === 'http' || p === 'https');
  if (protocols.length === 0) return 'length must be at least 1';
  return grpc && http ? "these sets are mutually exclusive: ('http', 'https'), ('grpc', 'grpcs')" : undefined;
}

export const routeFields: Record<string, Field> = {
  ...common,
  name: nameField,
  protocols: stringArray({ default: ['http', 'https'], elements: { type: 'string', oneOf: ['http', 'https', 'grpc', 'grpcs'] }, check: protocolSets }),
  methods: stringArray({ elements: { type: 'string', check: (v) => (/^[A-Z]+$/.test(v) ? undefined : 'invalid value: ' + v) } }),
  hosts: stringArray({
    elements: { type: 'string', check: (v) => (/^(\*\.)?[A-Za-z0-9.\-_]+(\.\*)?(:\d+)?$/.test(v) ? undefined : 'invalid hostname: ' + v) },
  }),
  paths: { type: 'array', elements: pathField },
  headers: {
    type: 'any',
    check: (v) =>
      typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((l) => Array.isArray(l) && l.every((s) => typeof s === 'string'))
        ? undefined
        : 'expected a map of header names to arrays of values',
  },
  https_redirect_status_code: {
    type: 'integer',
    default: 426,
    check: (v) => ([426, 301, 302, 307, 308].includes(v) ? undefined : 'expected one of: 426, 301, 302, 307, 308'),
  },
  regex_priority: { type: 'integer', default: 0 },
  strip_path: { type: 'boolean', default: true },
  path_handling: { type: 'string', default: 'v0', oneOf: ['v0'] },
  preserve_host: { type: 'boolean', default: false },
  request_buffering: { type: 'boolean', default: true, noEffect: 'request bodies are always streamed to the service, as Kong does with false', asIf: false },
  response_buffering: { type: 'boolean', default: true, noEffect: 'answers are always streamed to the client, as Kong does with false', asIf: false },
  service: foreignKey,
  snis: unsupported('SNI routing'),
  sources: unsupported('stream routing'),
  destinations: unsupported('stream routing'),
};

export const consumerFields: Record<string, Field> = {
  ...common,
  username: { type: 'string' },
  custom_id: { type: 'string' },
};

export const keyauthCredentialFields: Record<string, Field> = {
  ...common,
  key: { type: 'string', check: (v) => (v.length > 0 ? undefined : 'length must be at least 1') },
  consumer: foreignKey,
  ttl: { type: 'integer', between: [0, 100000000] },
};

export const pluginFields: Record<string, Field> = {
  ...common,
  name: { type: 'string', required: true },
  instance_name: nameField,
  config: { type: 'any' },
  enabled: { type: 'boolean', default: true },
  protocols: stringArray({ default: ['grpc', 'grpcs', 'http', 'https'] }),
  service: foreignKey,
  route: foreignKey,
  consumer: foreignKey,
  ordering: unsupported('dynamic plugin ordering'),
};

const HASH_ON = ['none', 'consumer', 'ip', 'header', 'cookie', 'path', 'query_arg', 'uri_capture'];
/** Hashing settings: only consistent-hashing reads them, and that algorithm is not offered, so anything but `none` is refused. */
const hashOn: StringField = {
  type: 'string',
  default: 'none',
  oneOf: HASH_ON,
  check: (v) =>
    v === 'none' ? undefined : "not supported by offcloud's gateway (hashing is for the consistent-hashing algorithm; only round-robin is offered)",
};
const hostname = (what: string): StringField => ({
  type: 'string',
  check: (v) => (HOST_NAME.test(v) && !isIP(v) ? undefined : `Invalid ${what} ('${v}'); must be a valid hostname`),
});
const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62}))*\.?$/;
const between = (low: number, high: number, fallback: number, integer = true): IntegerField | NumberField => ({
  type: integer ? 'integer' : 'number',
  default: fallback,
  between: [low, high],
});
/** A health-check setting that switches a check on when above 0: this gateway runs no health checks, so only 0 is accepted. */
const offOnly = (field: IntegerField | NumberField, what: string): Field => ({
  ...field,
  check: (v: number) => (v > 0 ? `not supported by offcloud's gateway (${what}); only 0 (off) is accepted` : undefined),
});
const ACTIVE = 'active health checks';
const statuses = (fallback: number[]): ArrayField => ({ type: 'array', default: fallback, elements: { type: 'integer', between: [100, 999] } });
const record = (fields: Record<string, Field>): Field => ({ type: 'record', default: {}, fields });
const COUNTER = 2 ** 31;

/**
 * Kong's `healthchecks` record with its defaults (every probe and counter
 * 0, i.e. off). The passive checks (proxy/health.ts) run as Kong's; active
 * probes are not run here, so an interval above 0 (which would switch them
 * on) is refused.
 */
const healthchecksField = record({
  active: record({
    type: { type: 'string', default: 'http', oneOf: ['tcp', 'http', 'https', 'grpc', 'grpcs'] },
    timeout: between(0, 65535, 1, false),
    concurrency: between(1, COUNTER, 10),
    http_path: { type: 'string', default: '/', check: (v) => (v.startsWith('/') ? undefined : 'should start with: /') },
    https_sni: { type: 'string' },
    https_verify_certificate: { type: 'boolean', default: true },
    headers: { type: 'any' },
    healthy: record({ interval: offOnly(between(0, 65535, 0, false), ACTIVE), http_statuses: statuses([200, 302]), successes: between(0, 255, 0) }),
    unhealthy: record({
      interval: offOnly(between(0, 65535, 0, false), ACTIVE),
      http_statuses: statuses([429, 404, 500, 501, 502, 503, 504, 505]),
      tcp_failures: between(0, 255, 0),
      timeouts: between(0, 255, 0),
      http_failures: between(0, 255, 0),
    }),
  }),
  passive: record({
    type: { type: 'string', default: 'http', oneOf: ['tcp', 'http', 'https', 'grpc', 'grpcs'] },
    healthy: record({
      http_statuses: statuses([200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 300, 301, 302, 303, 304, 305, 306, 307, 308]),
      successes: between(0, 255, 0),
    }),
    unhealthy: record({
      http_statuses: statuses([429, 500, 503]),
      tcp_failures: between(0, 255, 0),
      timeouts: between(0, 255, 0),
      http_failures: between(0, 255, 0),
    }),
  }),
  threshold: { ...between(0, 100, 0, false), noEffect: 'the upstream is not judged as a whole; unhealthy targets are skipped one by one', asIf: 0 },
});

export const upstreamFields: Record<string, Field> = {
  ...common,
  name: { ...hostname('name'), required: true },
  algorithm: {
    type: 'string',
    default: 'round-robin',
    oneOf: ['round-robin', 'consistent-hashing', 'least-connections', 'latency'],
    check: (v) => (v === 'round-robin' ? undefined : `not supported by offcloud's gateway (algorithm '${v}'; only round-robin is offered)`),
  },
  hash_on: hashOn,
  hash_fallback: hashOn,
  hash_on_header: { type: 'string' },
  hash_fallback_header: { type: 'string' },
  hash_on_cookie: { type: 'string' },
  hash_on_cookie_path: { type: 'string', default: '/', check: (v) => (v.startsWith('/') ? undefined : 'should start with: /') },
  hash_on_query_arg: { type: 'string' },
  hash_fallback_query_arg: { type: 'string' },
  hash_on_uri_capture: { type: 'string' },
  hash_fallback_uri_capture: { type: 'string' },
  slots: { type: 'integer', default: 10000, between: [10, 65536] },
  healthchecks: healthchecksField,
  host_header: hostname('host_header'),
  use_srv_name: { type: 'boolean', default: false, check: (v) => (v ? "not supported by offcloud's gateway (SRV records are not looked up)" : undefined) },
  client_certificate: unsupported('upstream client certificates'),
};

/** `host`, `host:port`, `a.b.c.d[:port]` or `[v6][:port]`, Kong's host_with_optional_port. */
/** Kong's port for a target written without one. */
export const DEFAULT_TARGET_PORT = 8000;

export function parseTarget(value: string): { host: string; port: number | null } | null {
  let host: string;
  let portText: string | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(value);
  if (bracketed) {
    host = bracketed[1]!;
    portText = bracketed[2];
    if (isIP(host) !== 6) return null;
  } else if (isIP(value) === 6) host = value;
  else {
    const plain = /^([^:]+)(?::(\d{1,5}))?$/.exec(value);
    if (!plain) return null;
    host = plain[1]!;
    portText = plain[2];
    if (isIP(host) !== 4 && !HOST_NAME.test(host)) return null;
  }
  const port = portText === undefined ? null : Number(portText);
  return port !== null && (port < 1 || port > 65535) ? null : { host, port };
}

export const targetFields: Record<string, Field> = {
  ...common,
  upstream: foreignKey,
  target: { type: 'string', required: true, check: (v) => (parseTarget(v) ? undefined : `Invalid target ('${v}'); not a valid hostname or ip address`) },
  weight: { type: 'integer', default: 100, between: [0, 65535] },
};

/** The jwt plugin's algorithms (Kong's jwt_secrets.algorithm). */
export const JWT_ALGORITHMS = ['HS256', 'HS384', 'HS512', 'RS256', 'RS384', 'RS512', 'ES256', 'ES384', 'PS256', 'PS384', 'PS512', 'EdDSA'] as const;

export const jwtSecretFields: Record<string, Field> = {
  ...common,
  consumer: foreignKey,
  key: { type: 'string' },
  secret: { type: 'string' },
  rsa_public_key: { type: 'string' },
  algorithm: { type: 'string', default: 'HS256', oneOf: JWT_ALGORITHMS },
};

export const aclFields: Record<string, Field> = {
  ...common,
  consumer: foreignKey,
  group: { type: 'string', required: true },
};

export const basicauthCredentialFields: Record<string, Field> = {
  ...common,
  consumer: foreignKey,
  username: { type: 'string', required: true },
  password: { type: 'string', required: true },
};

export const hmacauthCredentialFields: Record<string, Field> = {
  ...common,
  consumer: foreignKey,
  username: { type: 'string', required: true },
  secret: { type: 'string' },
};

/** Kong's basic-auth password hash: sha1 of the password followed by the consumer's id, in hex. */
export function hashBasicauthPassword(password: string, consumerId: string): string {
  return createHash('sha1')
    .update(password + consumerId)
    .digest('hex');
}

/** Entities that may be nested under a parent, and the foreign key they get. */
export const certificateFields: Record<string, Field> = {
  ...common,
  cert: { type: 'string', required: true },
  key: { type: 'string', required: true },
  cert_alt: { type: 'string' },
  key_alt: { type: 'string' },
};

/**
 * Kong's SNI name (typedefs.wildcard_host): a host name without a port,
 * with at most one `*`, as its whole leftmost or rightmost label; or `*`
 * alone (the certificate for names no other SNI takes).
 */
function checkSniName(name: string): string | undefined {
  if (name === '*') return undefined;
  if (/:\d+$/.test(name)) return 'must not have a port';
  const wildcards = name.split('*').length - 1;
  if (wildcards > 1) return 'only one wildcard must be specified';
  if (wildcards === 1 && !name.startsWith('*.') && !name.endsWith('.*')) return 'invalid wildcard: must be placed at leftmost or rightmost label';
  const labels = name.replace(/^\*\./, '').replace(/\.\*$/, '');
  return /^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$/.test(labels) ? undefined : 'invalid hostname';
}

export const sniFields: Record<string, Field> = {
  ...common,
  name: { type: 'string', required: true, check: checkSniName },
  certificate: foreignKey,
};

export const NESTED = {
  certificates: { snis: 'certificate' },
  upstreams: { targets: 'upstream' },
  services: { routes: 'service', plugins: 'service' },
  routes: { plugins: 'route' },
  consumers: {
    keyauth_credentials: 'consumer',
    jwt_secrets: 'consumer',
    acls: 'consumer',
    basicauth_credentials: 'consumer',
    hmacauth_credentials: 'consumer',
    plugins: 'consumer',
  },
} as const;
