/** The gateway's options, apart from its server so the CLI can list them without loading it. */
import { commonOptions, portOption, tlsOptions, type OptionSchema } from '../common/config.ts';

export const gatewayOptions = {
  ...commonOptions,
  ...tlsOptions,
  port: portOption(8000, 'proxy HTTP port (0 = any free port)'),
  httpsPort: portOption(8443, 'proxy HTTPS port (0 = any free port)'),
  adminPort: portOption(8001, 'admin API port (0 = any free port)'),
  adminHost: { type: 'string', default: '127.0.0.1', description: 'address of the admin API (it has no authentication: keep it on loopback)' },
  declarativeConfig: {
    type: 'string',
    default: '',
    description: "Kong declarative file (format 3.0, or 1.1/2.1 migrated; YAML or JSON); empty = the spec's deployment built from the options below",
  },
  usersUrl: { type: 'string', default: 'http://127.0.0.1:8083/api/getusers', description: 'default config: the user API backend behind GET /users' },
  calculatorUrl: { type: 'string', default: 'http://127.0.0.1:8082', description: 'default config: the calculator behind /calc/v1/add/<a>/<b>' },
  consumer: { type: 'string', default: 'demo', description: 'default config: the consumer that owns the API key' },
  apiKey: { type: 'string', default: '', description: "default config: that consumer's key (empty = generated once and kept in the data dir)" },
  redisUrl: {
    type: 'string',
    default: '',
    description: 'default config: redis://host:port to share rate-limit counters between gateways (empty = in process)',
  },
  trustedIps: { type: 'list', default: [] as string[], description: 'addresses whose X-Forwarded-* / X-Real-IP headers are believed (0.0.0.0/0 = all)' },
  maxBodySize: { type: 'integer', default: 100 * 1024 * 1024, min: 0, description: 'largest request body in bytes (0 = no limit)' },
  clientHeaderTimeout: { type: 'integer', default: 60000, min: 100, description: 'ms a client may take to send its request headers' },
  keepAliveTimeout: { type: 'integer', default: 60000, min: 100, description: 'ms an idle client connection stays open (Kong: 60000)' },
  workers: {
    type: 'integer',
    default: 1,
    min: 1,
    max: 64,
    description: 'proxy processes (1 = this process; more share the listeners, like nginx worker processes)',
  },
} as const satisfies OptionSchema;
