/** acl with acls, basic-auth with basicauth_credentials, and request-transformer, as Kong 3.x runs them. */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { request } from 'undici';
import { hashBasicauthPassword } from '../../src/gateway/config/entities.ts';
import { echoBackend, echoServiceWith, errorsOf, gatewayWith, hmacHeaders, loadDoc } from './helpers.ts';

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

async function call(url: string, init: Parameters<typeof request>[1] = {}) {
  const res = await request(url, init);
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: text };
}

const consumers = [
  { username: 'alice', basicauth_credentials: [{ username: 'alice', password: 'wonderland' }], acls: [{ group: 'admins' }, { group: 'staff' }] },
  { username: 'bob', basicauth_credentials: [{ username: 'bob', password: 'builder' }] },
  { username: 'mallory', basicauth_credentials: [{ username: 'mallory', password: 'm' }], acls: [{ group: 'banned' }] },
];

test('basic-auth: the right password passes as its consumer; a wrong or missing one is 401 Unauthorized with the Basic challenge', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, {
    _format_version: '3.0',
    services: [{ name: 'svc', url: backend.url, routes: [{ paths: ['/'], plugins: [{ name: 'basic-auth', config: { hide_credentials: true } }] }] }],
    consumers,
  });
  const ok = await call(`${gw.proxy}/`, { headers: { authorization: basic('alice', 'wonderland') } });
  assert.equal(ok.status, 200);
  assert.equal(backend.seen[0]!.headers['x-consumer-username'], 'alice');
  assert.equal(backend.seen[0]!.headers['x-credential-identifier'], 'alice');
  assert.equal(backend.seen[0]!.headers.authorization, undefined, 'hide_credentials');
  for (const headers of [{}, { authorization: basic('alice', 'wrong') }, { authorization: basic('nobody', 'x') }, { authorization: 'Basic !!!' }]) {
    const refused = await call(`${gw.proxy}/`, { headers });
    assert.equal(refused.status, 401);
    assert.equal(JSON.parse(refused.body).message, 'Unauthorized');
    assert.equal(refused.headers['www-authenticate'], 'Basic realm="service"');
  }
  assert.equal(backend.seen.length, 1);
});

test('basic-auth: passwords are stored as Kong hashes them; with _transform false the file gives the hash', () => {
  const plain = loadDoc({
    _format_version: '3.0',
    consumers: [{ username: 'u', id: '11111111-1111-4111-8111-111111111111', basicauth_credentials: [{ username: 'u', password: 'pw' }] }],
  });
  const stored = plain.entities.basicauth_credentials[0]!.password;
  assert.equal(stored, hashBasicauthPassword('pw', '11111111-1111-4111-8111-111111111111'));
  assert.match(stored, /^[0-9a-f]{40}$/);
  const hashed = loadDoc({
    _format_version: '3.0',
    _transform: false,
    consumers: [{ username: 'u', id: '11111111-1111-4111-8111-111111111111', basicauth_credentials: [{ username: 'u', password: stored }] }],
  });
  assert.equal(hashed.entities.basicauth_credentials[0]!.password, stored);
});

test('acl: allow and deny lists by group after authentication; X-Consumer-Groups; 401 without a consumer, 403 for the wrong group', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, {
    _format_version: '3.0',
    services: [
      {
        name: 'svc',
        url: backend.url,
        routes: [
          { name: 'admin', paths: ['/admin'], plugins: [{ name: 'basic-auth' }, { name: 'acl', config: { allow: ['admins'] } }] },
          { name: 'open', paths: ['/open'], plugins: [{ name: 'basic-auth' }, { name: 'acl', config: { deny: ['banned'], hide_groups_header: true } }] },
          { name: 'noauth', paths: ['/noauth'], plugins: [{ name: 'acl', config: { allow: ['admins'] } }] },
        ],
      },
    ],
    consumers,
  });
  const as = (who: string, password: string) => ({ headers: { authorization: basic(who, password) } });
  const admin = await call(`${gw.proxy}/admin`, as('alice', 'wonderland'));
  assert.equal(admin.status, 200);
  assert.equal(backend.seen.at(-1)!.headers['x-consumer-groups'], 'admins, staff');
  const bob = await call(`${gw.proxy}/admin`, as('bob', 'builder'));
  assert.equal(bob.status, 403);
  assert.equal(JSON.parse(bob.body).message, 'You cannot consume this service');
  assert.equal((await call(`${gw.proxy}/open`, as('bob', 'builder'))).status, 200);
  assert.equal(backend.seen.at(-1)!.headers['x-consumer-groups'], undefined, 'hide_groups_header');
  assert.equal((await call(`${gw.proxy}/open`, as('mallory', 'm'))).status, 403);
  const noauth = await call(`${gw.proxy}/noauth`);
  assert.equal(noauth.status, 401);
  assert.equal(JSON.parse(noauth.body).message, 'Unauthorized');
  assert.deepEqual(errorsOf({ _format_version: '3.0', plugins: [{ name: 'acl', config: {} }] }), [
    "plugins[0].config: at least one of these fields must be non-empty: 'config.allow', 'config.deny'",
  ]);
  assert.deepEqual(errorsOf({ _format_version: '3.0', plugins: [{ name: 'acl', config: { allow: ['a'], deny: ['b'] } }] }), [
    "plugins[0].config: only one of these fields must be non-empty: 'config.allow', 'config.deny'",
  ]);
});

test('request-transformer: remove, rename, replace, add, append on headers, query string and JSON/form bodies; method and uri', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, {
    _format_version: '3.0',
    services: [
      {
        name: 'svc',
        url: `${backend.url}/base`,
        routes: [
          {
            paths: ['/t'],
            plugins: [
              {
                name: 'request-transformer',
                config: {
                  http_method: 'POST',
                  remove: { headers: ['x-secret'], querystring: ['debug'], body: ['password'] },
                  rename: { headers: ['x-old:x-new'], querystring: ['q:query'], body: ['user:username'] },
                  replace: { headers: ['x-env:prod', 'x-absent:never'], querystring: ['page:1'], body: ['role:user'] },
                  add: { headers: ['x-added:yes', 'x-env:ignored'], querystring: ['source:gw'], body: ['added:1'] },
                  append: { headers: ['x-list:b'], querystring: ['tag:b'] },
                },
              },
            ],
          },
          { paths: ['/uri'], plugins: [{ name: 'request-transformer', config: { replace: { uri: '/fixed/path' } } }] },
        ],
      },
    ],
  });
  const res = await call(`${gw.proxy}/t/x?debug=1&q=cats&page=7&tag=a`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', 'x-secret': 's', 'x-old': 'o', 'x-env': 'dev', 'x-list': 'a' },
    body: JSON.stringify({ password: 'p', user: 'alice', role: 'admin' }),
  });
  assert.equal(res.status, 200);
  const seen = backend.seen[0]!;
  assert.equal(seen.method, 'POST');
  const url = new URL(seen.url, 'http://x');
  assert.equal(url.pathname, '/base/x');
  // Kong keeps arguments in a Lua table: their order is not part of its behaviour.
  assert.deepEqual([...url.searchParams].map(([k, v]) => `${k}=${v}`).sort(), ['page=1', 'query=cats', 'source=gw', 'tag=a', 'tag=b']);
  assert.equal(seen.headers['x-secret'], undefined);
  assert.equal(seen.headers['x-new'], 'o');
  assert.equal(seen.headers['x-old'], undefined);
  assert.equal(seen.headers['x-env'], 'prod');
  assert.equal(seen.headers['x-absent'], undefined);
  assert.equal(seen.headers['x-added'], 'yes');
  assert.equal(seen.headers['x-list'], 'a, b');
  assert.deepEqual(JSON.parse(seen.body.toString()), { username: 'alice', role: 'user', added: '1' });
  await call(`${gw.proxy}/uri/anything?a=1`);
  assert.equal(backend.seen[1]!.url, '/fixed/path?a=1');
  const form = await call(`${gw.proxy}/t`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'user=bob&password=x' });
  assert.equal(form.status, 200);
  assert.equal(backend.seen[2]!.body.toString(), 'username=bob&added=1');
  assert.deepEqual(
    errorsOf({ _format_version: '3.0', plugins: [{ name: 'request-transformer', config: { add: { headers: ['novalue', 'x:$(headers.y)'] } } }] }),
    [
      "plugins[0].config.add.headers[0]: invalid value: 'novalue' (expected 'name:value')",
      "plugins[0].config.add.headers[1]: not supported by offcloud's gateway (templates in values, $(…))",
    ],
  );
});

test("hmac-auth: Kong's signature string over date and request-line; clock skew, enforced headers, algorithms, body digest; Kong 3.x 401 messages", async (t) => {
  const { backend, gw } = await echoServiceWith(
    t,
    [
      {
        paths: ['/signed'],
        plugins: [{ name: 'hmac-auth', config: { hide_credentials: true, enforce_headers: ['date'], algorithms: ['hmac-sha256', 'hmac-sha512'] } }],
      },
      { paths: ['/body'], plugins: [{ name: 'hmac-auth', config: { validate_request_body: true } }] },
    ],
    { consumers: [{ username: 'partner', hmacauth_credentials: [{ username: 'partner-app', secret: 'partner-secret' }] }] },
  );
  const message = (r: { body: string }) => JSON.parse(r.body).message;
  const target = '/signed/orders?page=2';
  const ok = await call(`${gw.proxy}${target}`, { headers: hmacHeaders({ user: 'partner-app', secret: 'partner-secret', target }) });
  assert.equal(ok.status, 200);
  const seen = backend.seen.at(-1)!;
  assert.deepEqual(
    [seen.headers['x-consumer-username'], seen.headers['x-credential-identifier'], seen.headers.authorization],
    ['partner', 'partner-app', undefined],
  );
  const sha512 = await call(`${gw.proxy}${target}`, {
    headers: hmacHeaders({ user: 'partner-app', secret: 'partner-secret', target, algorithm: 'hmac-sha512' }),
  });
  assert.equal(sha512.status, 200);

  const refusals = [
    [{}, 'Unauthorized'],
    [hmacHeaders({ user: 'partner-app', secret: 'wrong', target }), 'HMAC signature does not match'],
    [hmacHeaders({ user: 'partner-app', secret: 'partner-secret', target: '/signed/other' }), 'HMAC signature does not match'],
    [hmacHeaders({ user: 'nobody', secret: 'partner-secret', target }), 'HMAC signature cannot be verified'],
    [hmacHeaders({ user: 'partner-app', secret: 'partner-secret', target, algorithm: 'hmac-sha1' }), 'HMAC signature cannot be verified'],
    [hmacHeaders({ user: 'partner-app', secret: 'partner-secret', target, signed: ['request-line'] }), 'HMAC signature cannot be verified'],
    [
      hmacHeaders({ user: 'partner-app', secret: 'partner-secret', target, date: new Date(Date.now() - 600_000) }),
      'HMAC signature cannot be verified, a valid date or x-date header is required for HMAC Authentication',
    ],
    [{ date: new Date().toUTCString(), authorization: 'hmac garbage' }, 'HMAC signature cannot be verified'],
  ] as const;
  for (const [headers, expected] of refusals) {
    const res = await call(`${gw.proxy}${target}`, { headers });
    assert.deepEqual([res.status, message(res)], [401, expected], JSON.stringify(headers));
  }

  const body = '{"amount":10}';
  const digest = `SHA-256=${createHash('sha256').update(body).digest('base64')}`;
  const post = (d: string) => ({
    method: 'POST' as const,
    body,
    headers: { ...hmacHeaders({ user: 'partner-app', secret: 'partner-secret', method: 'POST', target: '/body' }), digest: d },
  });
  assert.equal((await call(`${gw.proxy}/body`, post(digest))).status, 200);
  const tampered = await call(`${gw.proxy}/body`, post('SHA-256=AAAA'));
  assert.deepEqual([tampered.status, message(tampered)], [401, 'HMAC signature does not match']);
  assert.equal(backend.seen.length, 3);

  assert.deepEqual(errorsOf({ _format_version: '3.0', plugins: [{ name: 'hmac-auth', config: { algorithms: ['md5'], clock_skew: 0 } }] }), [
    'plugins[0].config.clock_skew: value must be greater than 0',
    'plugins[0].config.algorithms[0]: expected one of: hmac-sha1, hmac-sha256, hmac-sha384, hmac-sha512',
  ]);
  assert.deepEqual(errorsOf({ _format_version: '3.0', consumers: [{ username: 'c', hmacauth_credentials: [{ secret: 's' }] }] }), [
    'consumers[0].hmacauth_credentials[0].username: required field missing',
  ]);
});
