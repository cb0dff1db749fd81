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
import { fileURLToPath } from 'node:url';
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
};

const CORPUS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'corpus');

/**
 * The file as a user has it, with every service URL and upstream target
 * (compose-style names such as `http://rest:3000`) pointed at `backend`.
 */
function pointedAt(text: string, backend: string): string {
  return text.replace(/https?:\/\/[\w.-]+:\d+/g, backend).replace(/(target: )[\w.-]+:\d+/g, `$1${new URL(backend).host}`);
}

test('corpus: every file has its checks', async () => {
  assert.deepEqual((await readdir(CORPUS_DIR)).sort(), Object.keys(CHECKS).sort());
});

for (const [file, checks] of Object.entries(CHECKS)) {
  test(`corpus: ${file}`, async (t) => {
    const backend = await echoBackend(t);
    const gw = await gatewayWith(t, pointedAt(await readFile(join(CORPUS_DIR, file), 'utf8'), backend.url));
    for (const check of typeof checks === 'function' ? await checks() : checks) {
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
