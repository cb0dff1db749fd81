/**
 * The spec's deployment (§4.7, §5, §7, §8, §9) as a Kong 3.0 declarative
 * document: what the gateway loads when no file is given.
 */

export interface DeploymentInputs {
  /** The user API backend's list endpoint, e.g. http://127.0.0.1:8083/api/getusers. */
  usersUrl: string;
  /** The calculator's base URL, e.g. http://127.0.0.1:8082. */
  calculatorUrl: string;
  consumer: string;
  apiKey: string;
  /** Share the rate-limit counters through this Redis (`redis://host:port[/db]`); in process when absent. */
  redisUrl?: string;
}

/** `redis://[user:password@]host[:port][/db]` → rate-limiting's `redis` record. */
function redisRecord(redisUrl: string): Record<string, unknown> {
  const url = new URL(redisUrl);
  const record: Record<string, unknown> = { host: url.hostname, port: url.port ? Number(url.port) : 6379 };
  if (url.username) record.username = decodeURIComponent(url.username);
  if (url.password) record.password = decodeURIComponent(url.password);
  if (url.pathname.length > 1) record.database = Number(url.pathname.slice(1));
  if (url.protocol === 'rediss:') record.ssl = true;
  return record;
}

export function specDeployment(inputs: DeploymentInputs): Record<string, unknown> {
  const backend = { connect_timeout: 10000, read_timeout: 10000, write_timeout: 10000, retries: 10 };
  const rateLimit = inputs.redisUrl ? { second: 1, policy: 'redis', redis: redisRecord(inputs.redisUrl) } : { second: 1, policy: 'local' };
  return {
    _format_version: '3.0',
    _comment: 'offcloud gateway default: the spec deployment (GET /users with key-auth and 1 request/s; /calc/v1/add/<a>/<b>)',
    services: [
      {
        name: 'users',
        url: inputs.usersUrl,
        ...backend,
        routes: [
          { name: 'users', paths: ['/users'], methods: ['GET'], strip_path: true },
          // §7: plain HTTP to a route that only accepts HTTPS is refused (426).
          { name: 'users-https-only', paths: ['/secure/users'], methods: ['GET'], strip_path: true, protocols: ['https'] },
        ],
        plugins: [
          { name: 'key-auth', config: { key_names: ['apikey'], key_in_header: true, key_in_query: true } },
          { name: 'rate-limiting', config: rateLimit },
        ],
      },
      {
        name: 'calculator',
        url: `${inputs.calculatorUrl.replace(/\/+$/, '')}/add/`,
        routes: [{ name: 'calc-v1-add', paths: ['/calc/v1/add/'], methods: ['GET'], strip_path: true }],
      },
    ],
    consumers: [{ username: inputs.consumer, keyauth_credentials: [{ key: inputs.apiKey }] }],
  };
}
