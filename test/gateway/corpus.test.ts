/**
 * A corpus of declarative files (`corpus/*.yml`) in the shapes Kong's
 * documentation and microservice projects use (written for this suite),
 * each loaded as a user's file and driven with requests whose answers
 * follow Kong's documented semantics.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { SignJWT } from 'jose';
import { request } from 'undici';
import { tempDataDir } from '../helpers/index.ts';
import { echoBackend, gatewayWith, hmacHeaders } from './helpers.ts';

interface Check {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  status: number;
  /** The path the service got (with its query), when the request reaches it; null: it must not reach it (a cache hit). */
  upstream?: string | null;
  /** Headers of the answer, by lower-case name. */
  answer?: Record<string, string | undefined>;
  /** Fields of the answer's JSON body (others, such as Kong's request_id, are not compared). */
  body?: Record<string, unknown>;
}

const jwtToken = (iss: string, secret: string) =>
  new SignJWT({ iss, exp: Math.floor(Date.now() / 1000) + 600 }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode(secret));
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** What each file of `corpus/` is driven with, by file name. */
const CHECKS: Record<string, Check[] | (() => Promise<Check[]>)> = {
  'getting-started-2.1.yml': [
    { path: '/mock/anything', status: 200, upstream: '/anything' },
    { path: '/items/42', status: 200, upstream: '/items/42' },
    { path: '/items/abc', status: 404 },
  ],
  'legacy-1.1-comments.yml': [{ path: '/orders/7?x=1', status: 200, upstream: '/v1/7?x=1', answer: { 'x-ratelimit-limit-minute': '1000' } }],
  'self-hosting-cors-key-auth.yml': [
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
  'microservices-jwt-acl.yml': async () => {
    const token = await jwtToken('web-app-issuer', 'web-app-secret-value');
    return [
      { path: '/api/users/1', headers: { authorization: `Bearer ${token}` }, status: 200, upstream: '/users/1' },
      { path: '/api/admin/stats', headers: { authorization: `Bearer ${token}` }, status: 403 },
      { path: '/api/users/1', status: 401, answer: { 'www-authenticate': 'Bearer' } },
    ];
  },
  'dashboard-basic-auth-transformer.yml': [
    { path: '/dashboard/home', headers: { authorization: basic('ops', 's3cret') }, status: 200, upstream: '/home?source=gateway' },
    { path: '/dashboard/home', headers: { authorization: basic('ops', 'nope') }, status: 401, answer: { 'www-authenticate': 'Basic realm="service"' } },
  ],
  'upstream-top-level-routes.yml': [
    { path: '/shop/catalog/books', status: 200, upstream: '/catalog/books' },
    { method: 'POST', path: '/shop/catalog/books', status: 404 },
  ],
  'host-routing.yml': [
    { path: '/x', headers: { host: 'a.example.com' }, status: 200, upstream: '/a/x' },
    { path: '/x', headers: { host: 'b.example.com:8000' }, status: 200, upstream: '/any/x' },
    { path: '/x', headers: { 'x-beta': 'yes' }, status: 200, upstream: '/beta/x' },
    { path: '/x', status: 404 },
  ],
  'prometheus-regex-3.0.yml': [
    { path: '/reports/2024', status: 200, upstream: '/reports/2024' },
    { path: '/reports/24', status: 404 },
  ],
  'access-logging-ops.yml': [
    { path: '/billing/invoices', status: 200, upstream: '/api/invoices', answer: { 'x-served-by': 'gateway' } },
    { method: 'POST', path: '/billing/invoices', status: 200, upstream: '/api/invoices', answer: { 'x-served-by': 'gateway' } },
  ],
  'maintenance-and-ip-allowlist.yml': [
    { path: '/admin/users', status: 200, upstream: '/users' },
    { path: '/reports/v1/2024', status: 503, body: { message: 'Reports v1 is being migrated; use /reports/v2' } },
    { path: '/internal/stats', status: 404, body: { message: 'Not Found' } },
  ],
  'response-transformer-docs.yml': [
    {
      path: '/me',
      status: 200,
      upstream: '/',
      answer: { 'cache-control': 'no-store' },
      body: { url: '/', method: 'GET', bytes: 0, api_version: 3, beta: false, roles: ['reader'] },
    },
  ],
  'public-api-key-auth-rate-limits.yml': [
    { path: '/forecast/today', headers: { 'x-api-key': 'free-key' }, status: 200, upstream: '/v2/today', answer: { 'x-ratelimit-limit-minute': '5' } },
    { path: '/forecast/today', headers: { 'x-api-key': 'partner-key' }, status: 200, answer: { 'x-ratelimit-limit-minute': '1000' } },
    { path: '/forecast/today', status: 401, body: { message: 'No API key found in request' } },
    { method: 'POST', path: '/forecast/today', headers: { 'x-api-key': 'free-key' }, status: 404 },
  ],
  'catalog-proxy-cache.yml': [
    { path: '/catalog/products?page=1', status: 200, upstream: '/v1/products?page=1', answer: { 'x-cache-status': 'Miss' } },
    { path: '/catalog/products?page=1', status: 200, upstream: null, answer: { 'x-cache-status': 'Hit', age: '0' }, body: { url: '/v1/products?page=1' } },
    { path: '/catalog/products?utm_source=mail&page=1', status: 200, upstream: null, answer: { 'x-cache-status': 'Hit' } },
    { path: '/catalog/products?page=2', status: 200, upstream: '/v1/products?page=2', answer: { 'x-cache-status': 'Miss' } },
    { method: 'HEAD', path: '/catalog/products?page=1', status: 200, upstream: '/v1/products?page=1', answer: { 'x-cache-status': 'Miss' } },
    { method: 'POST', path: '/catalog/products', status: 200, upstream: '/v1/products', answer: { 'x-cache-status': 'Bypass' } },
    { path: '/orders/17', status: 200, upstream: '/17', answer: { 'x-cache-status': undefined } },
  ],
  'deck-dump-3.x.yml': [
    {
      path: '/inventory/items',
      headers: { apikey: 'mobile-app-key-2024' },
      status: 200,
      upstream: '/api/items',
      answer: { 'x-cache-status': 'Miss', 'x-ratelimit-limit-minute': '100' },
    },
    {
      path: '/inventory/items',
      headers: { apikey: 'mobile-app-key-2024' },
      status: 200,
      upstream: null,
      answer: { 'x-cache-status': 'Hit', 'x-ratelimit-remaining-minute': '98' },
    },
    { path: '/inventory/items', status: 401, body: { message: 'No API key found in request' } },
  ],
  'partner-api-hmac-auth.yml': async () => {
    const signed = (target: string) => hmacHeaders({ user: 'acme-integration', secret: '8c1f0e4a9d2b7f36', target });
    return [
      {
        path: '/partners/v1/orders?since=2024-01-01',
        headers: signed('/partners/v1/orders?since=2024-01-01'),
        status: 200,
        upstream: '/partners/orders?since=2024-01-01',
      },
      { path: '/partners/v1/orders', headers: signed('/partners/v1/invoices'), status: 401, body: { message: 'HMAC signature does not match' } },
      { path: '/partners/v1/orders', status: 401, body: { message: 'Unauthorized' } },
    ];
  },
};

const CORPUS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'corpus');

/**
 * The file as a user has it, with every service URL and upstream target
 * (compose-style names such as `http://rest:3000`) pointed at `backend`,
 * and its log files (under /var/log/kong/) written to `logDir`.
 */
function pointedAt(text: string, backend: string, logDir: string): string {
  return text
    .replace(/https?:\/\/[\w.-]+:\d+/g, backend)
    .replace(/(target: )[\w.-]+:\d+/g, `$1${new URL(backend).host}`)
    .replaceAll('/var/log/kong/', `${logDir}/`);
}

/** The JSON entries of the log files in `dir`, once there are `count` (file-log writes after the answer). */
async function logEntries(dir: string, count: number): Promise<unknown[]> {
  for (let i = 0; ; i++) {
    const texts = await Promise.all((await readdir(dir)).map((name) => readFile(join(dir, name), 'utf8')));
    const entries = texts
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as unknown);
    if (entries.length >= count || i === 500) return entries;
    await delay(10);
  }
}

test('corpus: every file has its checks', async () => {
  assert.deepEqual((await readdir(CORPUS_DIR)).sort(), Object.keys(CHECKS).sort());
});

for (const [file, checks] of Object.entries(CHECKS)) {
  test(`corpus: ${file}`, async (t) => {
    const backend = await echoBackend(t);
    const logDir = await tempDataDir(t);
    const text = await readFile(join(CORPUS_DIR, file), 'utf8');
    const gw = await gatewayWith(t, pointedAt(text, backend.url, logDir));
    const list = typeof checks === 'function' ? await checks() : checks;
    for (const check of list) {
      const before = backend.seen.length;
      const res = await request(`${gw.proxy}${check.path}`, { method: check.method ?? 'GET', headers: check.headers ?? {} });
      const body = await res.body.text();
      const what = `${check.method ?? 'GET'} ${check.path}`;
      assert.equal(res.statusCode, check.status, what);
      if (check.upstream) assert.equal(backend.seen[before]?.url, check.upstream, what);
      if (check.status >= 400 || check.upstream === null) assert.equal(backend.seen.length, before, `${what}: nothing reached the service`);
      for (const [name, value] of Object.entries(check.answer ?? {})) assert.equal(res.headers[name], value, `${what}: ${name}`);
      if (check.body !== undefined) {
        const answered = JSON.parse(body) as Record<string, unknown>;
        assert.deepEqual(Object.fromEntries(Object.keys(check.body).map((key) => [key, answered[key]])), check.body, `${what}: body`);
      }
    }
    // Kong's file-log writes one entry for every request, the gateway's own answers too.
    if (text.includes('name: file-log')) assert.equal((await logEntries(logDir, list.length)).length, list.length, 'file-log entries');
  });
}
