/** The proxy: Kong's status table produced for real, headers both ways, streaming, protocols. */
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { request as httpRequest } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { request } from 'undici';
import { resolveTls } from '../../src/common/tls.ts';
import { tempDataDir, eventWithin } from '../helpers/index.ts';
import { echoBackend, freePort, gatewayWith, listenOn } from './helpers.ts';

const doc = (service: Record<string, unknown>, routes: Record<string, unknown>[], extra: Record<string, unknown> = {}) => ({
  _format_version: '3.0',
  services: [{ name: 'svc', ...service, routes }],
  ...extra,
});

async function message(res: Awaited<ReturnType<typeof request>>): Promise<string> {
  return ((await res.body.json()) as { message: string }).message;
}

test('502 when the upstream refuses connections, after its retries', async (t) => {
  const port = await freePort();
  const gw = await gatewayWith(t, doc({ url: `http://127.0.0.1:${port}`, retries: 2 }, [{ paths: ['/'] }]));
  const res = await request(`${gw.proxy}/x`);
  assert.equal(res.statusCode, 502);
  assert.equal(await message(res), 'An invalid response was received from the upstream server');
  assert.match(String(res.headers['x-kong-response-latency']), /^\d+$/);
});

test('504 when the upstream answers slower than read_timeout; a read timeout is not retried', async (t) => {
  const backend = await echoBackend(t, (_req, res) => setTimeout(() => res.end('late'), 4000).unref());
  const gw = await gatewayWith(t, doc({ url: backend.url, read_timeout: 200, retries: 3 }, [{ paths: ['/'] }]));
  const started = Date.now();
  const res = await request(`${gw.proxy}/slow`);
  assert.equal(res.statusCode, 504);
  assert.equal(await message(res), 'The upstream server is timing out');
  assert.ok(Date.now() - started < 3000, 'answered at the read timeout, not when the upstream finished');
  assert.equal(backend.seen.length, 1);
});

test('503 when the upstream host name does not resolve', async (t) => {
  const gw = await gatewayWith(t, doc({ url: 'http://nothing.invalid:8080', retries: 0 }, [{ paths: ['/'] }]));
  const res = await request(`${gw.proxy}/x`);
  assert.equal(res.statusCode, 503);
  assert.equal(await message(res), 'name resolution failed');
});

test('https_redirect_status_code 301/308 redirects plain HTTP to HTTPS with an empty body', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(
    t,
    doc({ url: backend.url }, [
      { name: 'moved', paths: ['/moved'], protocols: ['https'], https_redirect_status_code: 301 },
      { name: 'perm', paths: ['/perm'], protocols: ['https'], https_redirect_status_code: 308 },
    ]),
  );
  const httpsPort = new URL(gw.https).port;
  for (const [path, status] of [
    ['/moved/a?b=1', 301],
    ['/perm', 308],
  ] as const) {
    const res = await request(`${gw.proxy}${path}`, { headers: { host: 'api.localhost:8000' } });
    assert.equal(res.statusCode, status);
    assert.equal(res.headers.location, `https://api.localhost:${httpsPort}${path}`);
    assert.equal(await res.body.text(), '');
  }
  assert.equal(backend.seen.length, 0);
});

test('X-Forwarded-Proto from a trusted address counts as HTTPS; from others it is ignored', async (t) => {
  const backend = await echoBackend(t);
  const routes = [{ paths: ['/secure'], protocols: ['https'] }];
  const untrusted = await gatewayWith(t, doc({ url: backend.url }, routes));
  const refused = await request(`${untrusted.proxy}/secure`, { headers: { 'x-forwarded-proto': 'https' } });
  assert.equal(refused.statusCode, 426);
  await refused.body.dump();
  const trusted = await gatewayWith(t, doc({ url: backend.url }, routes), { trustedIps: ['127.0.0.1'] });
  const passed = await request(`${trusted.proxy}/secure`, { headers: { 'x-forwarded-proto': 'https', 'x-real-ip': '203.0.113.9' } });
  assert.equal(passed.statusCode, 200);
  await passed.body.dump();
  assert.equal(backend.seen[0]!.headers['x-forwarded-proto'], 'https');
  assert.equal(backend.seen[0]!.headers['x-real-ip'], '203.0.113.9');
});

test('error bodies follow the Accept header like Kong: JSON, text, HTML, XML', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc({ url: backend.url }, [{ paths: ['/only'] }]));
  const get = (accept: string) => request(`${gw.proxy}/none`, { headers: { accept } });
  const plain = await get('text/plain');
  assert.equal(plain.headers['content-type'], 'text/plain; charset=utf-8');
  assert.match(await plain.body.text(), /^no Route matched with those values\nrequest_id: [0-9a-f]{32}\n$/);
  const html = await get('text/html,application/xhtml+xml;q=0.9');
  assert.equal(html.headers['content-type'], 'text/html; charset=utf-8');
  assert.match(await html.body.text(), /<p>no Route matched with those values\.<\/p>/);
  const xml = await get('application/xml');
  assert.equal(xml.headers['content-type'], 'application/xml; charset=utf-8');
  assert.match(await xml.body.text(), /<message>no Route matched with those values<\/message>\s*<requestid>[0-9a-f]{32}<\/requestid>/);
  const json = await get('text/plain;q=0.5, application/json');
  assert.equal(json.headers['content-type'], 'application/json; charset=utf-8');
  assert.equal(await message(json), 'no Route matched with those values');
});

test('the upstream gets X-Forwarded-*, X-Real-IP, Via, the request id and the service Host; hop-by-hop headers stay behind', async (t) => {
  const backend = await echoBackend(t, (_req, res) => res.writeHead(200, { server: 'backend/1', via: '1.0 cache' }).end('ok'));
  const port = new URL(backend.url).port;
  const gw = await gatewayWith(
    t,
    doc({ host: 'localhost', port: Number(port), path: '/base' }, [
      { name: 'api', paths: ['/api'] },
      { name: 'keep', paths: ['/keep'], preserve_host: true },
    ]),
  );
  const proxyPort = new URL(gw.proxy).port;
  const res = await request(`${gw.proxy}/api/items?x=1`, { headers: { 'x-forwarded-for': '198.51.100.1', te: 'trailers', 'x-custom': 'kept' } });
  assert.equal(res.statusCode, 200);
  assert.equal(await res.body.text(), 'ok');
  const seen = backend.seen[0]!;
  assert.equal(seen.url, '/base/items?x=1');
  assert.equal(seen.headers.host, `localhost:${port}`);
  assert.equal(seen.headers['x-forwarded-for'], '198.51.100.1, 127.0.0.1');
  assert.equal(seen.headers['x-forwarded-proto'], 'http');
  assert.equal(seen.headers['x-forwarded-host'], '127.0.0.1');
  assert.equal(seen.headers['x-forwarded-port'], proxyPort);
  assert.equal(seen.headers['x-forwarded-path'], '/api/items');
  assert.equal(seen.headers['x-forwarded-prefix'], '/api');
  assert.equal(seen.headers['x-real-ip'], '127.0.0.1');
  assert.equal(seen.headers.via, '1.1 offcloud-gateway/0.1');
  assert.equal(seen.headers['x-custom'], 'kept');
  assert.equal(seen.headers.te, undefined);
  assert.equal(seen.headers['x-kong-request-id'], res.headers['x-kong-request-id']);
  assert.equal(res.headers.server, 'backend/1', "the upstream's Server header is kept");
  assert.equal(res.headers.via, '1.0 cache, 1.1 offcloud-gateway/0.1');
  assert.match(String(res.headers['x-kong-upstream-latency']), /^\d+$/);
  assert.match(String(res.headers['x-kong-proxy-latency']), /^\d+$/);

  const kept = await request(`${gw.proxy}/keep`, { headers: { host: 'public.example' } });
  await kept.body.dump();
  assert.equal(backend.seen[1]!.headers.host, 'public.example', 'preserve_host keeps the client Host');
});

test('request bodies stream to the upstream and responses stream back without being buffered whole', async (t) => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const backend = await echoBackend(t, (req, res, body) => {
    if (req.method === 'POST') return res.end(String(body.length));
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('first chunk\n');
    void released.then(() => res.end('last chunk\n'));
  });
  const gw = await gatewayWith(t, doc({ url: backend.url }, [{ paths: ['/'] }]));

  const size = 6 * 1024 * 1024;
  async function* upload() {
    for (let sent = 0; sent < size; sent += 64 * 1024) yield Buffer.alloc(64 * 1024, 1);
  }
  const posted = await request(`${gw.proxy}/upload`, { method: 'POST', body: Readable.from(upload()) });
  assert.equal(posted.statusCode, 200);
  assert.equal(await posted.body.text(), String(size));

  const res = await request(`${gw.proxy}/download`);
  assert.equal(res.statusCode, 200);
  const [first] = await eventWithin<[Buffer]>(res.body, 'data', 'the first chunk of the streamed answer');
  assert.equal(first.toString(), 'first chunk\n', 'the first chunk arrives while the upstream is still writing');
  release();
  let rest = '';
  for await (const chunk of res.body) rest += chunk;
  assert.equal(rest, 'last chunk\n');
});

test('a buffered or streamed body larger than the limit gets 413; the gateway keeps serving', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc({ url: backend.url }, [{ paths: ['/'] }]), { maxBodySize: 1024 });
  const declared = await request(`${gw.proxy}/x`, { method: 'POST', body: Buffer.alloc(2048) });
  assert.equal(declared.statusCode, 413);
  assert.equal(await message(declared), 'Payload too large');
  async function* chunked() {
    for (let i = 0; i < 4; i++) yield Buffer.alloc(512);
  }
  const streamed = await request(`${gw.proxy}/x`, { method: 'POST', body: Readable.from(chunked()) });
  assert.equal(streamed.statusCode, 413);
  await streamed.body.dump();
  const small = await request(`${gw.proxy}/x`, { method: 'POST', body: 'small' });
  assert.equal(small.statusCode, 200);
  await small.body.dump();
});

test('504 when the upstream stops reading the request body for longer than write_timeout', async (t) => {
  const backend = await echoBackend(t);
  // Reads nothing: the request body backs up until the gateway's write timeout fires.
  backend.server.removeAllListeners('request');
  backend.server.on('request', (req) => req.pause());
  const gw = await gatewayWith(t, doc({ url: backend.url, write_timeout: 300, read_timeout: 60000, retries: 0 }, [{ paths: ['/'] }]));
  const { port } = new URL(gw.proxy);
  const status = await new Promise<number>((resolve, reject) => {
    const upload = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/upload', headers: { 'transfer-encoding': 'chunked' } }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    upload.on('error', reject);
    const chunk = Buffer.alloc(256 * 1024);
    const pump = () => {
      while (!upload.destroyed && upload.write(chunk));
      if (!upload.destroyed) upload.once('drain', pump);
    };
    pump();
  });
  assert.equal(status, 504);
});

test('HTTPS upstreams: tls_verify off (Kong default) connects; tls_verify on refuses an untrusted certificate with 502', async (t) => {
  const tls = await resolveTls({ tlsCert: '', tlsKey: '', dataDir: await tempDataDir(t) });
  const upstream = createHttpsServer({ cert: tls.cert, key: tls.key }, (req, res) => res.end(`secure ${req.method} ${req.url}`));
  const port = new URL(await listenOn(t, upstream)).port;
  const gw = await gatewayWith(t, {
    _format_version: '3.0',
    services: [
      { name: 'lax', url: `https://localhost:${port}/in`, retries: 0, routes: [{ paths: ['/lax'] }] },
      { name: 'strict', url: `https://localhost:${port}/in`, tls_verify: true, retries: 0, routes: [{ paths: ['/strict'] }] },
    ],
  });
  const lax = await request(`${gw.proxy}/lax/x`);
  assert.equal(lax.statusCode, 200);
  assert.equal(await lax.body.text(), 'secure GET /in/x');
  const head = await request(`${gw.proxy}/lax/x`, { method: 'HEAD' });
  assert.equal(head.statusCode, 200);
  assert.equal(await head.body.text(), '');
  const strict = await request(`${gw.proxy}/strict/x`);
  assert.equal(strict.statusCode, 502);
  await strict.body.dump();
});

test('a client that goes away mid-request makes the gateway drop the upstream request; it keeps serving', async (t) => {
  let upstreamClosed!: () => void;
  const closed = new Promise<void>((resolve) => (upstreamClosed = resolve));
  const backend = await echoBackend(t, (req, res) => {
    if (req.url === '/hang') res.once('close', upstreamClosed);
    else res.end('ok');
  });
  const gw = await gatewayWith(t, doc({ url: backend.url }, [{ paths: ['/'] }]));
  const controller = new AbortController();
  const pending = request(`${gw.proxy}/hang`, { signal: controller.signal });
  while (backend.seen.length === 0) await new Promise((resolve) => setImmediate(resolve));
  controller.abort();
  await assert.rejects(pending);
  await closed;
  const after = await request(`${gw.proxy}/ok`);
  assert.equal(await after.body.text(), 'ok');
});
