/** cors as Kong 3.x runs it: preflights answered by the gateway, headers on every other answer, origins exact or regex. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { echoBackend, errorsOf, gatewayWith } from './helpers.ts';

function doc(url: string, config: Record<string, unknown>, more: Record<string, unknown>[] = []) {
  return {
    _format_version: '3.0',
    services: [{ name: 'svc', url, routes: [{ name: 'r', paths: ['/'], plugins: [{ name: 'cors', config }, ...more] }] }],
    consumers: [{ username: 'alice', keyauth_credentials: [{ key: 'alice-key' }] }],
  };
}

async function call(url: string, init: Parameters<typeof request>[1] = {}) {
  const res = await request(url, init);
  const body = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body };
}

test('cors: a preflight is answered 200 by the gateway with the configured methods, headers, max age and credentials; the service sees nothing', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(
    t,
    doc(backend.url, { origins: ['http://app.example.com'], methods: ['GET', 'POST'], headers: ['X-Token'], max_age: 3600, credentials: true }),
  );
  const pre = await call(`${gw.proxy}/items`, {
    method: 'OPTIONS',
    headers: { origin: 'http://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-other' },
  });
  assert.equal(pre.status, 200);
  assert.equal(pre.body, '');
  assert.equal(pre.headers['access-control-allow-origin'], 'http://app.example.com');
  assert.equal(pre.headers['access-control-allow-methods'], 'GET,POST');
  assert.equal(pre.headers['access-control-allow-headers'], 'X-Token');
  assert.equal(pre.headers['access-control-max-age'], '3600');
  assert.equal(pre.headers['access-control-allow-credentials'], 'true');
  assert.equal(pre.headers.vary, 'Origin');
  assert.equal(backend.seen.length, 0);
});

test("cors: default config allows every origin (*), mirrors requested headers, and lists Kong's default methods", async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url, {}));
  const pre = await call(`${gw.proxy}/`, {
    method: 'OPTIONS',
    headers: { origin: 'http://any.test', 'access-control-request-method': 'PUT', 'access-control-request-headers': 'content-type,x-a' },
  });
  assert.equal(pre.headers['access-control-allow-origin'], '*');
  assert.equal(pre.headers['access-control-allow-headers'], 'content-type,x-a');
  assert.equal(pre.headers['access-control-allow-methods'], 'GET,HEAD,PUT,PATCH,POST,DELETE,OPTIONS,TRACE,CONNECT');
  const plain = await call(`${gw.proxy}/`, { headers: { origin: 'http://any.test' } });
  assert.equal(plain.status, 200);
  assert.equal(plain.headers['access-control-allow-origin'], '*');
  // An OPTIONS without Access-Control-Request-Method is not a preflight: it goes to the service.
  const options = await call(`${gw.proxy}/`, { method: 'OPTIONS', headers: { origin: 'http://any.test' } });
  assert.equal(JSON.parse(options.body).method, 'OPTIONS');
});

test("cors: regex and exact origins; a foreign origin gets no Allow-Origin; exposed headers; the service's own Allow-Origin is replaced", async (t) => {
  const backend = await echoBackend(t, (_req, res) => res.writeHead(200, { 'access-control-allow-origin': 'http://evil.test', vary: 'Accept' }).end('{}'));
  const gw = await gatewayWith(
    t,
    doc(backend.url, { origins: ['http://a.example.com', 'https://.*\\.example\\.org'], exposed_headers: ['X-Total', 'X-Page'] }),
  );
  const regex = await call(`${gw.proxy}/`, { headers: { origin: 'https://shop.example.org' } });
  assert.equal(regex.headers['access-control-allow-origin'], 'https://shop.example.org');
  assert.equal(regex.headers['access-control-expose-headers'], 'X-Total,X-Page');
  assert.deepEqual(regex.headers.vary, ['Accept', 'Origin'], "Vary: Origin is added to the service's Vary");
  const exact = await call(`${gw.proxy}/`, { headers: { origin: 'http://a.example.com:80' } });
  assert.equal(exact.headers['access-control-allow-origin'], 'http://a.example.com', 'the default port is normalized away');
  const foreign = await call(`${gw.proxy}/`, { headers: { origin: 'https://example.org.evil.test' } });
  assert.equal(foreign.headers['access-control-allow-origin'], undefined);
});

test('cors: runs before key-auth, so a preflight needs no key and a 401 carries the CORS headers', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url, { origins: ['http://app.test'] }, [{ name: 'key-auth' }]));
  const pre = await call(`${gw.proxy}/`, { method: 'OPTIONS', headers: { origin: 'http://app.test', 'access-control-request-method': 'GET' } });
  assert.equal(pre.status, 200);
  const refused = await call(`${gw.proxy}/`, { headers: { origin: 'http://app.test' } });
  assert.equal(refused.status, 401);
  assert.equal(refused.headers['access-control-allow-origin'], 'http://app.test');
  const allowed = await call(`${gw.proxy}/?apikey=alice-key`, { headers: { origin: 'http://app.test' } });
  assert.equal(allowed.status, 200);
  assert.equal(allowed.headers['access-control-allow-origin'], 'http://app.test');
});

test("cors: preflight_continue passes the preflight to the service; config errors are Kong's", async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url, { preflight_continue: true }));
  const pre = await call(`${gw.proxy}/`, { method: 'OPTIONS', headers: { origin: 'http://x.test', 'access-control-request-method': 'GET' } });
  assert.equal(JSON.parse(pre.body).method, 'OPTIONS');
  assert.equal(pre.headers['access-control-allow-origin'], undefined, 'the service answers the preflight itself');
  const errors = errorsOf({ _format_version: '3.0', plugins: [{ name: 'cors', config: { methods: ['FETCH'], max_age: 'x', origins: ['http://(a'] } }] });
  assert.match(errors[0]!, /^plugins\[0\]\.config\.origins\[0\]: 'http:\/\/\(a' is not a valid regex: .*missing \)/);
  assert.deepEqual(errors.slice(1), [
    'plugins[0].config.methods[0]: expected one of: GET, HEAD, PUT, PATCH, POST, DELETE, OPTIONS, TRACE, CONNECT',
    'plugins[0].config.max_age: expected a number',
  ]);
});
