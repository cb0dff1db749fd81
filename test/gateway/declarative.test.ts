/** Kong 3.0 declarative files: loading, Kong's defaults, errors named by path, routing and path rules. */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError, UsageError } from '../../src/common/errors.ts';
import { gateway } from '../../src/gateway/index.ts';
import { checkDeclarativeFile } from '../../src/gateway/config/parse-command.ts';
import { parseDeclarativeText } from '../../src/gateway/config/declarative.ts';
import { normalizePath, upstreamPath } from '../../src/gateway/proxy/router.ts';
import { PLUGINS } from '../../src/gateway/plugins/index.ts';
import { startGateway } from '../../src/gateway/server.ts';
import { quiet, tempDataDir } from '../helpers/index.ts';
import { errorsOf, loadDoc } from './helpers.ts';

/** The example of the reference (A.1), byte for byte. */
const KONG_EXAMPLE = `_format_version: "3.0"
services:
- name: users
  url: http://backend:8080/api/getusers   # url is shorthand for protocol/host/port/path
  connect_timeout: 10000
  read_timeout: 10000
  write_timeout: 10000
  retries: 10
  routes:
  - name: users
    paths: ["/users"]
    methods: ["GET"]
    strip_path: true
    plugins:
    - name: key-auth
      config: { key_names: ["apikey"], key_in_header: true, key_in_query: true }
    - name: rate-limiting
      config: { second: 1, policy: local }
- name: calc
  url: http://calc:8080
  routes:
  - name: calc-add
    paths: ["~/calc/v1/add/(?<a>-?\\\\d+)/(?<b>-?\\\\d+)$"]
consumers:
- username: alice
  keyauth_credentials:
  - key: alice-secret-key
`;

const load = loadDoc;

test("the reference's Kong 3.0 example loads unchanged, with Kong's defaults filled in", () => {
  const { entities, routes } = load(KONG_EXAMPLE);
  const [users, calc] = entities.services;
  assert.deepEqual(
    { protocol: users!.protocol, host: users!.host, port: users!.port, path: users!.path, retries: users!.retries, connect_timeout: users!.connect_timeout },
    { protocol: 'http', host: 'backend', port: 8080, path: '/api/getusers', retries: 10, connect_timeout: 10000 },
  );
  assert.deepEqual(
    { retries: calc!.retries, connect: calc!.connect_timeout, read: calc!.read_timeout, write: calc!.write_timeout, path: calc!.path, enabled: calc!.enabled },
    { retries: 5, connect: 60000, read: 60000, write: 60000, path: null, enabled: true },
  );
  const route = entities.routes.find((r) => r.name === 'calc-add')!;
  assert.deepEqual(route.protocols, ['http', 'https']);
  assert.equal(route.strip_path, true);
  assert.equal(route.preserve_host, false);
  assert.equal(route.https_redirect_status_code, 426);
  assert.equal(route.regex_priority, 0);
  assert.equal(route.service!.id, calc!.id);
  const keyAuth = entities.plugins.find((p) => p.name === 'key-auth')!;
  assert.deepEqual(keyAuth.config, {
    key_names: ['apikey'],
    hide_credentials: false,
    anonymous: null,
    key_in_header: true,
    key_in_query: true,
    key_in_body: false,
    run_on_preflight: true,
    realm: null,
  });
  assert.equal(keyAuth.route!.id, entities.routes.find((r) => r.name === 'users')!.id);
  const limit = entities.plugins.find((p) => p.name === 'rate-limiting')!.config as Record<string, unknown>;
  assert.equal(limit.limit_by, 'consumer');
  assert.equal(limit.fault_tolerant, true);
  assert.equal(limit.hide_client_headers, false);
  assert.equal(limit.error_code, 429);
  assert.equal(limit.error_message, 'API rate limit exceeded');
  assert.deepEqual(limit.redis, {
    host: null,
    port: 6379,
    timeout: 2000,
    username: null,
    password: null,
    database: 0,
    ssl: false,
    ssl_verify: false,
    server_name: null,
  });
  assert.equal(entities.keyauth_credentials[0]!.key, 'alice-secret-key');
  assert.equal(entities.keyauth_credentials[0]!.consumer.id, entities.consumers[0]!.id);
  const match = routes.match({ method: 'GET', host: 'x', path: '/calc/v1/add/-2/40', headers: {} });
  assert.equal(match?.candidate.route.name, 'calc-add');
});

test('the same configuration as JSON loads the same entities with the same ids', () => {
  const yaml = load(KONG_EXAMPLE).entities;
  const json = load(JSON.stringify(parseDeclarativeText(KONG_EXAMPLE))).entities;
  assert.deepEqual(
    json.services.map((s) => [s.id, s.name]),
    yaml.services.map((s) => [s.id, s.name]),
  );
  assert.deepEqual(
    json.routes.map((r) => r.id),
    yaml.routes.map((r) => r.id),
  );
});

test('top-level plugins name their parents; the deprecated redis_* shorthands still work', () => {
  const { entities } = load({
    _format_version: '3.0',
    services: [{ name: 's', host: 'h', routes: [{ name: 'r', paths: ['/'] }] }],
    consumers: [{ custom_id: 'c-1' }],
    keyauth_credentials: [{ consumer: 'c-1', key: 'k' }],
    plugins: [
      { name: 'rate-limiting', service: 's', consumer: 'c-1', config: { minute: 5, policy: 'redis', redis_host: '127.0.0.1', redis_port: 6390 } },
      { name: 'key-auth', route: { name: 'r' } },
    ],
  });
  const limit = entities.plugins[0]!;
  assert.equal(limit.service!.id, entities.services[0]!.id);
  assert.equal(limit.consumer!.id, entities.consumers[0]!.id);
  assert.deepEqual((limit.config.redis as { host: string; port: number }).host, '127.0.0.1');
  assert.equal((limit.config.redis as { port: number }).port, 6390);
  assert.equal(entities.services[0]!.port, 80, "Kong's default port");
  assert.equal(entities.keyauth_credentials[0]!.consumer.id, entities.consumers[0]!.id);
});

test('invalid files fail with the path of every bad key', () => {
  const base = (routes: unknown[], extra: Record<string, unknown> = {}) => ({
    _format_version: '3.0',
    services: [{ name: 's', url: 'http://h', routes }],
    ...extra,
  });
  assert.deepEqual(errorsOf(base([{ paths: ['/ok'] }, { paths: ['~/(unclosed'] }])), [
    'services[0].routes[1].paths[0]: invalid regex: Invalid regular expression: /^/(unclosed/: Unterminated group',
  ]);
  assert.deepEqual(errorsOf(base([{ paths: ['users'] }])), ['services[0].routes[0].paths[0]: should start with: / (fixed path) or ~/ (regex path)']);
  assert.deepEqual(errorsOf(base([{ paths: ['/a'], stripPath: true }])), ['services[0].routes[0].stripPath: unknown field']);
  assert.deepEqual(errorsOf(base([{ paths: ['/a'], plugins: [{ name: 'oauth2' }] }])), [
    `services[0].routes[0].plugins[0].name: plugin 'oauth2' not enabled; this gateway has: ${[...PLUGINS.keys()].join(', ')}`,
  ]);
  assert.deepEqual(errorsOf(base([{ paths: ['/a'], plugins: [{ name: 'key-auth', config: { key_names: ['bad name'], typo: 1 } }] }])), [
    'services[0].routes[0].plugins[0].config.typo: unknown field',
    "services[0].routes[0].plugins[0].config.key_names[0]: bad header name 'bad name', allowed characters are A-Z, a-z, 0-9, '_', and '-'",
  ]);
  assert.deepEqual(errorsOf(base([{ methods: ['get'] }])), ['services[0].routes[0].methods[0]: invalid value: get']);
  assert.deepEqual(errorsOf(base([{}])), [
    "services[0].routes[0]: must set one of 'methods', 'hosts', 'headers', 'paths' when 'protocols' is 'http' or 'https'",
  ]);
  assert.deepEqual(errorsOf({ _format_version: '3.0', services: [{ host: 'h', retries: -1, connect_timeout: '10s' }] }), [
    'services[0].retries: value should be between 0 and 32767',
    'services[0].connect_timeout: expected an integer',
  ]);
  assert.deepEqual(errorsOf({ services: [] }), ['_format_version: required field missing']);
  assert.deepEqual(errorsOf({ _format_version: '2.0' }), ['_format_version: expected one of: 1.1, 2.1, 3.0']);
  assert.deepEqual(errorsOf({ _format_version: '3.0', vaults: [{ prefix: 'x' }], servics: [] }), [
    "vaults: not supported by offcloud's gateway (Kong entity 'vaults')",
    'servics: unknown field',
  ]);
  assert.deepEqual(errorsOf({ _format_version: '3.0', routes: [{ paths: ['/'], service: 'missing' }] }), [
    "routes[0].service: references a service that does not exist: 'missing'",
    'routes[0].service: a route must belong to a service',
  ]);
  assert.deepEqual(
    errorsOf({
      _format_version: '3.0',
      services: [
        { name: 'a', host: 'h' },
        { name: 'a', host: 'h' },
      ],
    }),
    ["services[1].name: uniqueness violation: 'a' is also used by services[0]"],
  );
  assert.deepEqual(errorsOf({ _format_version: '3.0', consumers: [{ tags: ['x'] }] }), [
    "consumers[0]: at least one of these fields must be non-empty: 'custom_id', 'username'",
  ]);
  assert.deepEqual(errorsOf({ _format_version: '3.0', services: [{ url: 'ftp://h' }] }), ['services[0].url: expected one of: http, https']);
});

test('rate-limiting config errors use Kong wording and paths', () => {
  const withLimit = (config: Record<string, unknown>) => ({ _format_version: '3.0', plugins: [{ name: 'rate-limiting', config }] });
  assert.deepEqual(errorsOf(withLimit({ second: 10, minute: 5 })), [
    'plugins[0].config: The limit for minute(5.0) cannot be lower than the limit for second(10.0)',
  ]);
  assert.deepEqual(errorsOf(withLimit({})), [
    "plugins[0].config: at least one of these fields must be non-empty: 'config.second', 'config.minute', 'config.hour', 'config.day', 'config.month', 'config.year'",
  ]);
  assert.deepEqual(errorsOf(withLimit({ second: 1, policy: 'cluster' })), [
    "plugins[0].config.policy: strategy 'cluster' is not supported with DB-less mode; use 'local' or 'redis'",
  ]);
  assert.deepEqual(errorsOf(withLimit({ second: 1, policy: 'redis' })), ["plugins[0].config.redis.host: required field missing when 'policy' is 'redis'"]);
  assert.deepEqual(errorsOf(withLimit({ second: 0 })), ['plugins[0].config.second: value must be greater than 0']);
  assert.deepEqual(errorsOf(withLimit({ second: 1, limit_by: 'header' })), [
    "plugins[0].config.header_name: required field missing when 'limit_by' is 'header'",
  ]);
  assert.deepEqual(errorsOf({ _format_version: '3.0', consumers: [{ username: 'u', plugins: [{ name: 'key-auth' }] }] }), [
    'consumers[0].plugins[0].consumer: value must be null (key-auth cannot be applied to a consumer)',
  ]);
});

test('a broken YAML file is refused with its line, and start-up names the file and the path', async (t) => {
  assert.match(errorsOf('_format_version: "3.0"\nservices: [\n')[0]!, /^: not valid YAML or JSON: .*line/);
  const dataDir = await tempDataDir(t);
  const file = join(dataDir, 'kong.yml');
  await writeFile(file, '_format_version: "3.0"\nservices:\n- name: s\n  host: h\n  routes:\n  - paths: ["/a"]\n  - paths: ["/b"]\n    hots: ["x"]\n');
  await assert.rejects(
    startGateway({ ...quiet, httpsPort: 0, adminPort: 0, dataDir, declarativeConfig: file }),
    (err: unknown) => err instanceof ConfigError && err.message.includes(file) && err.message.includes('services[0].routes[1].hots: unknown field'),
  );
});

test("upstream paths follow Kong's path_handling v0 (reference A.1)", () => {
  const { entities } = load({
    _format_version: '3.0',
    services: [
      {
        name: 's',
        host: 'h',
        routes: [
          { name: 'strip', paths: ['/users'] },
          { name: 'keep', paths: ['/users'], strip_path: false, methods: ['GET'] },
        ],
      },
    ],
  });
  const strip = entities.routes[0]!;
  const keep = entities.routes[1]!;
  const base = '/api/getusers';
  assert.equal(upstreamPath(strip, base, '/users', '/users'), '/api/getusers');
  assert.equal(upstreamPath(strip, base, '/users/', '/users'), '/api/getusers/');
  assert.equal(upstreamPath(strip, base, '/users/7', '/users'), '/api/getusers/7');
  assert.equal(upstreamPath(strip, base, '/usersX', '/users'), '/api/getusers/X');
  assert.equal(upstreamPath(keep, base, '/users', '/users'), '/api/getusers/users');
  assert.equal(upstreamPath(strip, '/add/', '/calc/v1/add/2/3', '/calc/v1/add/'), '/add/2/3');
  assert.equal(upstreamPath(strip, null, '/users/7', '/users'), '/7');
  assert.equal(upstreamPath(strip, null, '/users', '/users'), '/');
  assert.equal(upstreamPath(keep, null, '/users/7', '/users'), '/users/7');
  assert.equal(upstreamPath(keep, '/base/', '/users/7', '/users'), '/base/users/7');
});

test('request paths are normalized like nginx; escapes that change the path structure are refused', () => {
  assert.equal(normalizePath('/users'), '/users');
  assert.equal(normalizePath('/a//b/./c/../d'), '/a/b/d');
  assert.equal(normalizePath('/%75sers'), '/users');
  assert.equal(normalizePath('/a/%20b'), '/a/%20b');
  assert.equal(normalizePath('/a/..'), '/');
  for (const bad of ['/../etc/passwd', '/a/../../b', '/users%2F..%2Fadmin', '/a%5cb', '/a%00', '/a%zz', '/a%2', 'users', '*']) {
    assert.throws(
      () => normalizePath(bad),
      (err: unknown) => (err as { status?: number }).status === 400,
      bad,
    );
  }
});

test("routes are tried in Kong's priority order", () => {
  const { routes } = load({
    _format_version: '3.0',
    services: [
      {
        name: 's',
        host: 'h',
        routes: [
          { name: 'short', paths: ['/api'] },
          { name: 'long', paths: ['/api/v1'] },
          { name: 'regex-low', paths: ['~/api/v1/items/\\d+$'] },
          { name: 'regex-high', paths: ['~/api/v1/items/7$'], regex_priority: 5 },
          { name: 'host-and-path', paths: ['/api'], hosts: ['*.example.com'] },
          { name: 'exact-host', paths: ['/api'], hosts: ['b.example.com'] },
          { name: 'get-only', paths: ['/api/v1'], methods: ['GET'] },
          { name: 'header', headers: { 'x-version': ['2'] } },
        ],
      },
    ],
  });
  const route = (method: string, path: string, host = 'other', headers: Record<string, string> = {}) =>
    routes.match({ method, path, host, headers })?.candidate.route.name;
  assert.equal(route('POST', '/api/x'), 'short');
  assert.equal(route('POST', '/api/v1/x'), 'long', 'the longer plain path wins');
  assert.equal(route('GET', '/api/v1/x'), 'get-only', 'a route with more criteria comes first');
  assert.equal(route('POST', '/api/v1/items/3'), 'regex-low', 'regex paths before plain ones');
  assert.equal(route('POST', '/api/v1/items/7'), 'regex-high', 'higher regex_priority first');
  assert.equal(route('POST', '/api/v1/x', 'a.example.com:8000'), 'host-and-path', 'hosts outrank paths');
  assert.equal(route('POST', '/api/v1/x', 'b.example.com'), 'exact-host', 'an exact host outranks a wildcard');
  assert.equal(route('POST', '/apix'), 'short', 'plain paths are string prefixes');
  assert.equal(route('POST', '/nothing', 'other', { 'x-version': '2' }), 'header');
  assert.equal(route('POST', '/nothing'), undefined);
});

test('a bad URL option of the default configuration stops start-up naming its flag', async (t) => {
  const dataDir = await tempDataDir(t);
  const start = (options: Record<string, string>) => startGateway({ ...quiet, httpsPort: 0, adminPort: 0, dataDir, apiKey: 'k', ...options });
  await assert.rejects(
    start({ redisUrl: 'localhost:6379' }),
    (err: unknown) => err instanceof ConfigError && err.message.includes('--redis-url (OFFCLOUD_GATEWAY_REDIS_URL)'),
  );
  await assert.rejects(start({ usersUrl: 'not a url' }), (err: unknown) => err instanceof ConfigError && err.message.includes('--users-url'));
  await assert.rejects(start({ calculatorUrl: 'ftp://h' }), (err: unknown) => err instanceof ConfigError && err.message.includes('--calculator-url'));
});

test('offcloud gateway parse checks a file like `kong config parse`: success for a good one, every path for a bad one', async (t) => {
  const dataDir = await tempDataDir(t);
  const good = join(dataDir, 'good.yml');
  const bad = join(dataDir, 'bad.json');
  await writeFile(good, KONG_EXAMPLE);
  await writeFile(bad, JSON.stringify({ _format_version: '3.0', services: [{ host: 'h', routes: [{ paths: ['x'] }] }], plugins: [{ name: 'nope' }] }));
  assert.deepEqual(await checkDeclarativeFile(good), {
    ok: true,
    message: 'parse successful: 2 services, 2 routes, 1 consumers, 1 keyauth_credentials, 2 plugins',
  });
  const failed = await checkDeclarativeFile(bad);
  assert.equal(failed.ok, false);
  assert.match(failed.message, /services\[0\]\.routes\[0\]\.paths\[0\]: should start with/);
  assert.match(failed.message, /plugins\[0\]\.name: plugin 'nope' not enabled/);
  assert.equal((await checkDeclarativeFile(join(dataDir, 'missing.yml'))).ok, false);
  await assert.rejects(gateway.subcommands!.parse!.run([]), (err: unknown) => err instanceof UsageError);
});
