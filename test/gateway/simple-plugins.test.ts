/** request-termination, correlation-id and request-size-limiting as Kong 3.x runs them. */
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { request } from 'undici';
import { echoBackend, echoServiceWith, errorsOf, gatewayWith } from './helpers.ts';

async function call(url: string, init: Parameters<typeof request>[1] = {}) {
  const res = await request(url, init);
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
}

test('request-termination: message, raw body with content type, trigger; the service sees nothing', async (t) => {
  const { backend, gw } = await echoServiceWith(t, [
    { paths: ['/down'], plugins: [{ name: 'request-termination', config: { status_code: 503, message: 'Down for maintenance' } }] },
    { paths: ['/teapot'], plugins: [{ name: 'request-termination', config: { status_code: 418, body: '<p>tea</p>', content_type: 'text/html' } }] },
    { paths: ['/maybe'], plugins: [{ name: 'request-termination', config: { status_code: 403, trigger: 'x-block' } }] },
  ]);
  const down = await call(`${gw.proxy}/down`);
  assert.equal(down.status, 503);
  assert.equal(JSON.parse(down.body).message, 'Down for maintenance');
  const teapot = await call(`${gw.proxy}/teapot`);
  assert.deepEqual([teapot.status, teapot.body, teapot.headers['content-type']], [418, '<p>tea</p>', 'text/html']);
  assert.equal((await call(`${gw.proxy}/maybe`)).status, 200);
  assert.equal((await call(`${gw.proxy}/maybe`, { headers: { 'x-block': '1' } })).status, 403);
  assert.equal((await call(`${gw.proxy}/maybe?x-block`)).status, 403);
  assert.equal(backend.seen.length, 1);
  assert.deepEqual(errorsOf({ _format_version: '3.0', plugins: [{ name: 'request-termination', config: { message: 'a', body: 'b', status_code: 700 } }] }), [
    'plugins[0].config.status_code: value should be between 100 and 599',
  ]);
  assert.deepEqual(errorsOf({ _format_version: '3.0', plugins: [{ name: 'request-termination', config: { message: 'a', body: 'b' } }] }), [
    "plugins[0].config: 'message' cannot be used with 'body'",
  ]);
});

test('correlation-id: an id per request upstream (uuid#counter), the client one kept, echoed downstream', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, {
    _format_version: '3.0',
    plugins: [{ name: 'correlation-id', config: { echo_downstream: true } }],
    services: [{ name: 's', url: backend.url, routes: [{ paths: ['/'] }] }],
  });
  const first = await call(`${gw.proxy}/`);
  const second = await call(`${gw.proxy}/`);
  const given = await call(`${gw.proxy}/`, { headers: { 'kong-request-id': 'mine-1' } });
  const ids = backend.seen.map((s) => s.headers['kong-request-id']);
  assert.match(String(ids[0]), /^[0-9a-f-]{36}#1$/);
  assert.match(String(ids[1]), /^[0-9a-f-]{36}#2$/);
  assert.equal(ids[2], 'mine-1');
  assert.deepEqual([first.headers['kong-request-id'], second.headers['kong-request-id'], given.headers['kong-request-id']], ids);
});

test('request-size-limiting: 413 over the limit by Content-Length or by a chunked body; 411 when a length is required', async (t) => {
  const { backend, gw } = await echoServiceWith(t, [
    { paths: ['/small'], plugins: [{ name: 'request-size-limiting', config: { allowed_payload_size: 10, size_unit: 'bytes' } }] },
    { paths: ['/strict'], plugins: [{ name: 'request-size-limiting', config: { require_content_length: true } }] },
  ]);
  assert.equal((await call(`${gw.proxy}/small`, { method: 'POST', body: '0123456789' })).status, 200);
  const over = await call(`${gw.proxy}/small`, { method: 'POST', body: '0123456789x' });
  assert.deepEqual([over.status, JSON.parse(over.body).message], [413, 'Request size limit exceeded']);
  const chunked = () => Readable.from([Buffer.from('012345'), Buffer.from('6789xy')]);
  assert.equal((await call(`${gw.proxy}/small`, { method: 'POST', body: chunked() })).status, 413);
  const strict = await call(`${gw.proxy}/strict`, { method: 'POST', body: chunked() });
  assert.deepEqual([strict.status, JSON.parse(strict.body).message], [411, 'A valid Content-Length header is required']);
  assert.equal(backend.seen.length, 1);
});

test('ip-restriction: deny first, then allow ranges; Kong 403 message or the configured status and message', async (t) => {
  const { backend, gw } = await echoServiceWith(t, [
    { paths: ['/local'], plugins: [{ name: 'ip-restriction', config: { allow: ['127.0.0.0/8', '::1'] } }] },
    { paths: ['/denied'], plugins: [{ name: 'ip-restriction', config: { deny: ['127.0.0.1'], status: 401, message: 'go away' } }] },
    { paths: ['/elsewhere'], plugins: [{ name: 'ip-restriction', config: { allow: ['10.0.0.0/8'] } }] },
  ]);
  assert.equal((await call(`${gw.proxy}/local`)).status, 200);
  const denied = await call(`${gw.proxy}/denied`);
  assert.deepEqual([denied.status, JSON.parse(denied.body).message], [401, 'go away']);
  const elsewhere = await call(`${gw.proxy}/elsewhere`);
  assert.deepEqual([elsewhere.status, JSON.parse(elsewhere.body).message], [403, 'Your IP address is not allowed']);
  assert.equal(backend.seen.length, 1);
  assert.deepEqual(errorsOf({ _format_version: '3.0', plugins: [{ name: 'ip-restriction', config: { allow: ['10.0.0.0/33', 'host'] } }] }), [
    "plugins[0].config.allow[0]: invalid ip or cidr range: '10.0.0.0/33'",
    "plugins[0].config.allow[1]: invalid ip or cidr range: 'host'",
  ]);
});

test("response-transformer: header and JSON edits in Kong's order, json_types casts, Content-Length follows; other bodies untouched", async (t) => {
  const backend = await echoBackend(t, (req, res) => {
    if (req.url === '/text') return res.writeHead(200, { 'content-type': 'text/plain', 'x-internal': '1' }).end('{"secret":1}');
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'x-internal': '1', 'x-old': 'old' }).end('{"secret":1,"name":"a","tags":"t"}');
  });
  const config = {
    remove: { headers: ['x-internal'], json: ['secret'] },
    rename: { headers: ['x-old:x-new'], json: ['name:title'] },
    replace: { json: ['title:Mr', 'missing:x'] },
    add: { headers: ['x-added:1'], json: ['count:3', 'ok:true', 'title:ignored'], json_types: ['number', 'boolean'] },
    append: { headers: ['x-new:two'], json: ['tags:u', 'list:v'] },
  };
  const gw = await gatewayWith(t, {
    _format_version: '3.0',
    services: [{ name: 's', url: backend.url, routes: [{ paths: ['/'] }], plugins: [{ name: 'response-transformer', config }] }],
  });
  const json = await call(`${gw.proxy}/json`);
  assert.deepEqual(JSON.parse(json.body), { title: 'Mr', tags: ['t', 'u'], count: 3, ok: true, list: ['v'] });
  assert.equal(json.headers['content-length'], String(Buffer.byteLength(json.body)));
  assert.deepEqual(
    [json.headers['x-internal'], json.headers['x-new'], json.headers['x-old'], json.headers['x-added']],
    [undefined, ['old', 'two'], undefined, '1'],
  );
  const text = await call(`${gw.proxy}/text`);
  assert.deepEqual([text.body, text.headers['x-internal'], text.headers['x-added']], ['{"secret":1}', undefined, '1']);
  assert.deepEqual(
    errorsOf({ _format_version: '3.0', plugins: [{ name: 'response-transformer', config: { add: { json: ['novalue'], json_types: ['date'] } } }] }),
    [
      "plugins[0].config.add.json[0]: invalid value: 'novalue' (expected 'name:value')",
      'plugins[0].config.add.json_types[0]: expected one of: boolean, number, string',
    ],
  );
});
