/**
 * Kong 3.x entity schemas (services, routes, consumers, key-auth
 * credentials, plugins) with Kong's defaults. Fields Kong has but this
 * gateway does not act on are refused by name rather than silently ignored.
 */
import { unsupported, type ArrayField, type Field, type StringField } from './schema.ts';

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
      try {
        new RegExp(`^${v.slice(1)}`);
      } catch (err) {
        return `invalid regex: ${(err as Error).message}`;
      }
      return v.startsWith('~/') ? undefined : 'should start with: / (fixed path) or ~/ (regex path)';
    }
    return v.startsWith('/') ? undefined : 'should start with: / (fixed path) or ~/ (regex path)';
  },
};

export const routeFields: Record<string, Field> = {
  ...common,
  name: nameField,
  protocols: stringArray({ default: ['http', 'https'], elements: { type: 'string', oneOf: ['http', 'https'] } }),
  methods: stringArray({ elements: { type: 'string', check: (v) => (/^[A-Z]+$/.test(v) ? undefined : 'invalid value: ' + v) } }),
  hosts: stringArray({ elements: { type: 'string', check: (v) => (/^(\*\.)?[A-Za-z0-9.\-_]+(\.\*)?(:\d+)?$/.test(v) ? undefined : 'invalid hostname: ' + v) } }),
  paths: { type: 'array', elements: pathField },
  headers: {
    type: 'any',
    check: (v) =>
      typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((l) => Array.isArray(l) && l.every((s) => typeof s === 'string'))
        ? undefined
        : 'expected a map of header names to arrays of values',
  },
  https_redirect_status_code: { type: 'integer', default: 426, check: (v) => ([426, 301, 302, 307, 308].includes(v) ? undefined : 'expected one of: 426, 301, 302, 307, 308') },
  regex_priority: { type: 'integer', default: 0 },
  strip_path: { type: 'boolean', default: true },
  path_handling: { type: 'string', default: 'v0', oneOf: ['v0'] },
  preserve_host: { type: 'boolean', default: false },
  request_buffering: { type: 'boolean', default: true },
  response_buffering: { type: 'boolean', default: true },
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

/** Entities that may be nested under a parent, and the foreign key they get. */
export const NESTED = {
  services: { routes: 'service', plugins: 'service' },
  routes: { plugins: 'route' },
  consumers: { keyauth_credentials: 'consumer', plugins: 'consumer' },
} as const;
