/**
 * A corpus of declarative files in the shapes Kong's documentation and
 * microservice projects use (written for this suite), each loaded as a
 * user's file and driven with requests whose answers follow Kong's
 * documented semantics.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SignJWT } from 'jose';
import { request } from 'undici';
import { echoBackend, gatewayWith } from './helpers.ts';

interface Check {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  status: number;
  /** The path the service got (with its query), when the request reaches it. */
  upstream?: string;
  /** Headers of the answer, by lower-case name. */
  answer?: Record<string, string | undefined>;
}

const jwtToken = (iss: string, secret: string) =>
  new SignJWT({ iss, exp: Math.floor(Date.now() / 1000) + 600 }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode(secret));
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

const CORPUS: { name: string; file: (url: string) => string; checks: () => Promise<Check[]> | Check[] }[] = [
  {
    name: "Kong's getting-started example, format 2.1, with a regex path migrated",
    file: (url) => `_format_version: "2.1"
_transform: true
services:
- name: example-service
  url: ${url}
  routes:
  - name: example-route
    paths:
    - /mock
  - name: items-by-id
    paths:
    - /items/\\d+$
    strip_path: false
`,
    checks: () => [
      { path: '/mock/anything', status: 200, upstream: '/anything' },
      { path: '/items/42', status: 200, upstream: '/items/42' },
      { path: '/items/abc', status: 404 },
    ],
  },
  {
    name: 'format 1.1 with _comment everywhere and a global rate limit',
    file: (url) => `_format_version: "1.1"
_comment: exported from an old Kong 1.x node
services:
- name: orders
  _comment: the orders API
  url: ${url}/v1
  routes:
  - name: orders
    _comment: public
    paths: ["/orders"]
plugins:
- name: rate-limiting
  _comment: generous, for the demo
  config:
    minute: 1000
    policy: local
`,
    checks: () => [{ path: '/orders/7?x=1', status: 200, upstream: '/v1/7?x=1', answer: { 'x-ratelimit-limit-minute': '1000' } }],
  },
  {
    name: 'a self-hosting stack: cors on a SPA backend with key-auth, _ignore on consumers',
    file: (url) => `_format_version: "3.0"
consumers:
- username: anon
  _ignore: [do-not-sync]
- username: service_role
  keyauth_credentials:
  - key: service-role-key
services:
- name: rest-v1
  url: ${url}/
  routes:
  - name: rest-v1-all
    strip_path: true
    paths: [/rest/v1/]
  plugins:
  - name: cors
  - name: key-auth
    config:
      hide_credentials: true
`,
    checks: () => [
      {
        method: 'OPTIONS',
        path: '/rest/v1/todos',
        headers: { origin: 'http://localhost:3000', 'access-control-request-method': 'GET' },
        status: 200,
        answer: { 'access-control-allow-origin': '*' },
      },
      { path: '/rest/v1/todos', status: 401, answer: { 'access-control-allow-origin': '*' } },
      { path: '/rest/v1/todos', headers: { apikey: 'service-role-key' }, status: 200, upstream: '/todos' },
    ],
  },
  {
    name: 'microservices behind jwt with per-route acl groups',
    file: (url) => `_format_version: "3.0"
services:
- name: users-service
  url: ${url}/users
  routes:
  - name: users
    paths: [/api/users]
    plugins:
    - name: acl
      config: { allow: [users-readers] }
- name: admin-service
  url: ${url}/admin
  routes:
  - name: admin
    paths: [/api/admin]
    plugins:
    - name: acl
      config: { allow: [admins], hide_groups_header: true }
plugins:
- name: jwt
  config:
    claims_to_verify: [exp]
consumers:
- username: web-app
  jwt_secrets:
  - key: web-app-issuer
    secret: web-app-secret-value
  acls:
  - group: users-readers
`,
    checks: async () => {
      const token = await jwtToken('web-app-issuer', 'web-app-secret-value');
      return [
        { path: '/api/users/1', headers: { authorization: `Bearer ${token}` }, status: 200, upstream: '/users/1' },
        { path: '/api/admin/stats', headers: { authorization: `Bearer ${token}` }, status: 403 },
        { path: '/api/users/1', status: 401, answer: { 'www-authenticate': 'Bearer' } },
      ];
    },
  },
  {
    name: 'basic-auth for an internal dashboard, request-transformer adding a tenant header',
    file: (url) => `_format_version: "3.0"
services:
- name: dashboard
  url: ${url}
  routes:
  - name: dashboard
    paths: [/dashboard]
    plugins:
    - name: basic-auth
      config: { hide_credentials: true }
    - name: request-transformer
      config:
        add:
          headers: ["x-tenant:acme"]
          querystring: ["source:gateway"]
        remove:
          headers: [cookie]
consumers:
- username: ops
  basicauth_credentials:
  - username: ops
    password: s3cret
`,
    checks: () => [
      { path: '/dashboard/home', headers: { authorization: basic('ops', 's3cret') }, status: 200, upstream: '/home?source=gateway' },
      { path: '/dashboard/home', headers: { authorization: basic('ops', 'nope') }, status: 401, answer: { 'www-authenticate': 'Basic realm="service"' } },
    ],
  },
  {
    name: 'upstream with weighted targets and top-level routes naming their service',
    file: (url) => `_format_version: "3.0"
upstreams:
- name: catalog.internal
  targets:
  - target: ${new URL(url).host}
    weight: 100
services:
- name: catalog
  host: catalog.internal
  path: /catalog
routes:
- name: catalog-get
  service: catalog
  paths: [/shop/catalog]
  methods: [GET, HEAD]
`,
    checks: () => [
      { path: '/shop/catalog/books', status: 200, upstream: '/catalog/books' },
      { method: 'POST', path: '/shop/catalog/books', status: 404 },
    ],
  },
  {
    name: 'host-based routing with a wildcard and an exact host, and a header route',
    file: (url) => `_format_version: "3.0"
services:
- name: tenant-a
  url: ${url}/a
  routes:
  - name: tenant-a
    hosts: [a.example.com]
- name: tenants
  url: ${url}/any
  routes:
  - name: tenants
    hosts: ["*.example.com"]
- name: beta
  url: ${url}/beta
  routes:
  - name: beta
    paths: [/]
    headers:
      x-beta: ["yes"]
`,
    checks: () => [
      { path: '/x', headers: { host: 'a.example.com' }, status: 200, upstream: '/a/x' },
      { path: '/x', headers: { host: 'b.example.com:8000' }, status: 200, upstream: '/any/x' },
      { path: '/x', headers: { 'x-beta': 'yes' }, status: 200, upstream: '/beta/x' },
      { path: '/x', status: 404 },
    ],
  },
  {
    name: 'prometheus, global, with a regex route of the 3.0 form',
    file: (url) => `_format_version: "3.0"
plugins:
- name: prometheus
  config: { status_code_metrics: true }
services:
- name: reports
  url: ${url}
  routes:
  - name: report-by-year
    paths: ["~/reports/(?<year>\\\\d{4})$"]
    strip_path: false
`,
    checks: () => [
      { path: '/reports/2024', status: 200, upstream: '/reports/2024' },
      { path: '/reports/24', status: 404 },
    ],
  },
];

for (const entry of CORPUS) {
  test(`corpus: ${entry.name}`, async (t) => {
    const backend = await echoBackend(t);
    const gw = await gatewayWith(t, entry.file(backend.url));
    for (const check of await entry.checks()) {
      const before = backend.seen.length;
      const res = await request(`${gw.proxy}${check.path}`, { method: check.method ?? 'GET', headers: check.headers ?? {} });
      await res.body.dump();
      const what = `${check.method ?? 'GET'} ${check.path}`;
      assert.equal(res.statusCode, check.status, what);
      if (check.upstream !== undefined) assert.equal(backend.seen[before]?.url, check.upstream, what);
      if (check.status >= 400) assert.equal(backend.seen.length, before, `${what}: nothing reached the service`);
      for (const [name, value] of Object.entries(check.answer ?? {})) assert.equal(res.headers[name], value, `${what}: ${name}`);
    }
  });
}
