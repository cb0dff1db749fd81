/**
 * The proxy listeners' limits (docs/gateway.md, "Limits per client"): each is
 * gone just over while a well-behaved client on the same gateway keeps being
 * served. The HTTPS ones reproduce two attacks found in review:
 * TCP connections that close or stay silent without finishing a TLS handshake
 * used to stay open for ever, until the process ran out of descriptors.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { Socket } from 'node:net';
import { test } from 'node:test';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { Agent, request } from 'undici';
import { gatewayWith, listenOn } from './helpers.ts';
import { closedByServer, PARTIAL_CLIENT_HELLO, rawConnection } from '../resilience/harness.ts';
import { eventWithin } from '../helpers/index.ts';

type After = Parameters<typeof gatewayWith>[0];

const HEAD_LIMIT = 16 * 1024;
const BODY_LIMIT = 1000;

/** A gateway in front of an echo upstream that takes heads bigger than the gateway's own limit. */
async function limited(t: After, options: Parameters<typeof gatewayWith>[2] = {}) {
  const upstream = createServer({ maxHeaderSize: 64 * 1024 }, (req, res) => {
    let bytes = 0;
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => {
      const body = JSON.stringify({ bytes });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length }).end(body);
    });
  });
  const url = await listenOn(t, upstream);
  const gw = await gatewayWith(
    t,
    { _format_version: '3.0', services: [{ name: 's', url, routes: [{ paths: ['/api'] }] }] },
    { maxBodySize: BODY_LIMIT, ...options },
  );
  const ca = await readFile(gw.caCertPath, 'utf8');
  const tls = new Agent({ connect: { ca } });
  t.after(() => tls.close());
  /** The well-behaved client: one plain and one HTTPS request, both answered. */
  const served = async () => {
    for (const [base, dispatcher] of [
      [gw.proxy, undefined],
      [gw.https, tls],
    ] as const) {
      const res = await request(`${base}/api/ok`, { dispatcher });
      assert.equal(res.statusCode, 200, base);
      await res.body.dump();
    }
  };
  return { gw, ca, served };
}

function portOf(url: string): number {
  return Number(new URL(url).port);
}

/** Sends raw bytes and collects the answer until the gateway closes the connection. */
async function rawAnswer(url: string, bytes: string): Promise<string> {
  const socket = await rawConnection(new URL(url));
  let got = '';
  socket.on('data', (chunk: Buffer) => (got += chunk.toString('latin1')));
  socket.write(bytes, 'latin1');
  await closedByServer(socket);
  return got;
}

const statusOf = (answer: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);

/** A regression here shows as a connection that never closes: fail in bounded time, not at the runner's limit. */
const BOUNDED = { timeout: 60_000 };

/** Reads one answer with a Content-Length from a TLS socket. */
async function readAnswer(socket: TLSSocket): Promise<string> {
  let got = '';
  for await (const chunk of socket.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    got += chunk.toString('latin1');
    const end = got.indexOf('\r\n\r\n');
    const length = /\r\ncontent-length: (\d+)/i.exec(got)?.[1];
    if (end >= 0 && length !== undefined && got.length >= end + 4 + Number(length)) break;
  }
  return got;
}

/** Connects `count` times to the HTTPS port and sends a FIN (half of them after the start of a ClientHello); the gateway must close every one. */
async function finBeforeHandshake(t: After, count: number, options: Parameters<typeof gatewayWith>[2] = {}): Promise<void> {
  const { gw, served } = await limited(t, options);
  const sockets: Socket[] = [];
  for (let i = 0; i < count; i++) {
    const socket = await rawConnection(new URL(gw.https));
    // Half of them send the start of a ClientHello first, then their FIN.
    if (i % 2) socket.write(PARTIAL_CLIENT_HELLO);
    socket.end();
    sockets.push(socket);
  }
  await served();
  // The client side closes only once the gateway has closed its side too (no CLOSE-WAIT left).
  await Promise.all(sockets.map(closedByServer));
  await served();
}

test('HTTPS: 200 connections that close before or during the TLS handshake are all closed by the gateway, which keeps serving', BOUNDED, (t) =>
  finBeforeHandshake(t, 200),
);

test('HTTPS with --workers 2: connections that close before the TLS handshake are closed by the worker that got them', BOUNDED, (t) =>
  finBeforeHandshake(t, 40, { workers: 2 }),
);

test('HTTPS: connections that never finish the handshake are closed after the handshake timeout; finished ones are not', BOUNDED, async (t) => {
  const { gw, ca, served } = await limited(t, { tlsHandshakeTimeout: 300 });
  const silent = await rawConnection(new URL(gw.https));
  const stalled = await rawConnection(new URL(gw.https));
  stalled.write(PARTIAL_CLIENT_HELLO);
  // A completed connection idle for longer than the handshake timeout keeps serving.
  const kept = tlsConnect({ port: portOf(gw.https), host: '127.0.0.1', ca, servername: 'localhost' });
  await eventWithin(kept, 'secureConnect', 'the TLS handshake of the well-behaved client');
  t.after(() => kept.destroy());
  await served();
  await Promise.all([closedByServer(silent), closedByServer(stalled)]);
  for (let i = 0; i < 2; i++) {
    kept.write('GET /api/kept HTTP/1.1\r\nHost: localhost\r\n\r\n');
    assert.equal(statusOf(await readAnswer(kept)), 200);
  }
  await served();
});

test('HTTPS: a client that sends its request and half-closes still gets its whole answer', async (t) => {
  const { gw, ca, served } = await limited(t);
  const socket = tlsConnect({ port: portOf(gw.https), host: '127.0.0.1', ca, servername: 'localhost' });
  await eventWithin(socket, 'secureConnect', 'the TLS handshake of the well-behaved client');
  t.after(() => socket.destroy());
  socket.end('POST /api/half HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\r\nabc');
  const answer = await readAnswer(socket);
  assert.equal(statusOf(answer), 200);
  assert.match(answer, /\{"bytes":3\}$/);
  await served();
});

test('request head: exactly the limit is proxied, one byte over is 431', async (t) => {
  const { gw, served } = await limited(t);
  // What counts: the request target plus, per header, name + value + 4 (": " and CRLF).
  const head = (padding: number) => `GET /api HTTP/1.1\r\nHost: x\r\nX-Pad: ${'p'.repeat(padding)}\r\nConnection: close\r\n\r\n`;
  const fixed = '/api'.length + ('Host'.length + 1 + 4) + ('X-Pad'.length + 4) + ('Connection'.length + 'close'.length + 4);
  assert.equal(statusOf(await rawAnswer(gw.proxy, head(HEAD_LIMIT - fixed))), 200);
  const over = await rawAnswer(gw.proxy, head(HEAD_LIMIT - fixed + 1));
  assert.equal(statusOf(over), 431);
  assert.match(over, /"message":"Request header or cookie too large"/);
  await served();
});

test('request body: exactly --max-body-size is proxied, one byte over is 413 (declared or chunked)', async (t) => {
  const { gw, served } = await limited(t);
  const at = await request(`${gw.proxy}/api/body`, { method: 'POST', body: Buffer.alloc(BODY_LIMIT, 'b') });
  assert.equal(at.statusCode, 200);
  assert.deepEqual(await at.body.json(), { bytes: BODY_LIMIT });
  const declared = await request(`${gw.proxy}/api/body`, { method: 'POST', body: Buffer.alloc(BODY_LIMIT + 1, 'b') });
  assert.equal(declared.statusCode, 413);
  await declared.body.dump();
  const chunked = await rawAnswer(
    gw.proxy,
    `POST /api/body HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n${(BODY_LIMIT + 1).toString(16)}\r\n${'b'.repeat(BODY_LIMIT + 1)}\r\n0\r\n\r\n`,
  );
  assert.equal(statusOf(chunked), 413);
  await served();
});

test('idle connections: one that sends nothing is closed after the keep-alive timeout while others are served', BOUNDED, async (t) => {
  const { gw, served } = await limited(t, { keepAliveTimeout: 300 });
  const idle = await rawConnection(new URL(gw.proxy));
  await served();
  await closedByServer(idle);
  await served();
});
