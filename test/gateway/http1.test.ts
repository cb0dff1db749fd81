/**
 * The gateway's own HTTP/1.1 on both sides (src/gateway/http/server.ts, upstream.ts,
 * parser.ts), seen from real sockets: pipelining, HTTP/1.0, request and
 * answer framing, smuggling refusals, upstream keep-alive and timeouts,
 * half-closed clients and large bodies with backpressure.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { test, type TestContext } from 'node:test';
import { request } from 'undici';
import { DEBIAN_PYTHON, debianProgram, eventWithin } from '../helpers/index.ts';
import { echoBackend, gatewayWith, listenOn } from './helpers.ts';

type After = Pick<TestContext, 'after'>;

const doc = (service: Record<string, unknown>) => ({
  _format_version: '3.0',
  services: [{ name: 'svc', retries: 0, ...service, routes: [{ paths: ['/'] }] }],
});

const portOf = (url: string) => Number(new URL(url).port);
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const REQUEST_ID = /^[0-9a-f]{32}$/;

/** One answer as a raw client read it off the wire. */
interface RawResponse {
  status: number;
  statusLine: string;
  /** Lower-case name → values, in order. */
  headers: Map<string, string[]>;
  body: Buffer;
  /** The body was chunked on the wire. */
  chunked: boolean;
  /** The body ended with the connection (no length, no chunking). */
  closeDelimited: boolean;
  /** The connection ended before the answer was complete. */
  truncated: boolean;
}

const header = (res: RawResponse, name: string): string | undefined => res.headers.get(name)?.join(', ');

/** A client on a raw socket: writes exact bytes, reads answers one by one as framed on the wire. */
class RawClient {
  private buffer = Buffer.alloc(0);
  ended = false;
  closed = false;
  private wake: (() => void) | null = null;
  readonly closedPromise: Promise<void>;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.poke();
    });
    socket.on('end', () => {
      this.ended = true;
      this.poke();
    });
    socket.on('error', () => {});
    this.closedPromise = new Promise((resolve) =>
      socket.on('close', () => {
        this.closed = true;
        this.ended = true;
        this.poke();
        resolve();
      }),
    );
  }

  static async open(t: After, url: string, allowHalfOpen = false): Promise<RawClient> {
    const socket = connect({ port: portOf(url), host: '127.0.0.1', allowHalfOpen });
    await eventWithin(socket, 'connect', 'a TCP connection to the gateway');
    const client = new RawClient(socket);
    t.after(() => socket.destroy());
    return client;
  }

  /** A client that sends `bytes`, then half-closes (FIN) and keeps reading. */
  static async halfClosed(t: After, url: string, bytes: string): Promise<RawClient> {
    const client = await RawClient.open(t, url, true);
    client.write(bytes);
    client.socket.end();
    return client;
  }

  write(bytes: string | Buffer): void {
    this.socket.write(typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes);
  }

  private poke(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  private more(): Promise<void> {
    if (this.ended) return Promise.resolve();
    return new Promise((resolve) => (this.wake = resolve));
  }

  /** Waits for `n` bytes (or the end); returns false when the connection ended first. */
  private async need(n: number): Promise<boolean> {
    while (this.buffer.length < n) {
      if (this.ended) return false;
      await this.more();
    }
    return true;
  }

  private async line(): Promise<string | null> {
    for (;;) {
      const at = this.buffer.indexOf('\r\n');
      if (at >= 0) {
        const text = this.buffer.subarray(0, at).toString('latin1');
        this.buffer = this.buffer.subarray(at + 2);
        return text;
      }
      if (this.ended) return null;
      await this.more();
    }
  }

  private take(n: number): Buffer {
    const out = this.buffer.subarray(0, n);
    this.buffer = this.buffer.subarray(n);
    return out;
  }

  /** Reads the next answer; `bodyless` for the answer to HEAD. Interim 1xx answers are returned as they come. */
  async response(options: { bodyless?: boolean } = {}): Promise<RawResponse> {
    const statusLine = await this.line();
    if (statusLine === null) throw new Error(`the connection ended before an answer; left: ${JSON.stringify(this.buffer.toString('latin1'))}`);
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]);
    assert.ok(status, `a status line: ${JSON.stringify(statusLine)}`);
    const headers = new Map<string, string[]>();
    for (;;) {
      const line = await this.line();
      if (line === null) throw new Error('the connection ended inside an answer head');
      if (line === '') break;
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).toLowerCase();
      headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
    }
    const res: RawResponse = { status, statusLine, headers, body: Buffer.alloc(0), chunked: false, closeDelimited: false, truncated: false };
    if (options.bodyless || status < 200 || status === 204 || status === 304) return res;
    const chunks: Buffer[] = [];
    if (/chunked/i.test(header(res, 'transfer-encoding') ?? '')) {
      res.chunked = true;
      for (;;) {
        const sizeLine = await this.line();
        if (sizeLine === null) return { ...res, body: Buffer.concat(chunks), truncated: true };
        const size = parseInt(sizeLine, 16);
        if (size === 0) {
          // Trailers (none expected) up to the empty line.
          for (let l = await this.line(); l !== null && l !== ''; l = await this.line());
          break;
        }
        if (!(await this.need(size + 2))) return { ...res, body: Buffer.concat([...chunks, this.take(this.buffer.length)]), truncated: true };
        chunks.push(this.take(size));
        this.take(2);
      }
    } else if (res.headers.has('content-length')) {
      const length = Number(header(res, 'content-length'));
      if (!(await this.need(length))) return { ...res, body: this.take(this.buffer.length), truncated: true };
      chunks.push(this.take(length));
    } else {
      res.closeDelimited = true;
      while (!this.ended) await this.more();
      chunks.push(this.take(this.buffer.length));
    }
    return { ...res, body: Buffer.concat(chunks) };
  }

  /** Resolves once the server has closed the connection (its FIN or a reset). */
  async serverClosed(): Promise<void> {
    while (!this.ended) await this.more();
  }

  /** Bytes received and not yet read as an answer. */
  get leftover(): Buffer {
    return this.buffer;
  }
}

/** Sends one request on a fresh connection and reads its answer. */
async function exchange(t: After, url: string, bytes: string, options: { bodyless?: boolean } = {}): Promise<{ res: RawResponse; client: RawClient }> {
  const client = await RawClient.open(t, url);
  client.write(bytes);
  return { res: await client.response(options), client };
}

/**
 * An upstream on a raw net server: `answer` gets each request head as text
 * (bodies are not expected) and writes exactly the bytes it wants. Counts
 * connections.
 */
async function rawUpstream(t: After, answer: (socket: Socket, head: string, index: number) => void) {
  const state = { connections: 0, requests: [] as string[] };
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    state.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let pending = '';
    socket.on('data', (chunk: Buffer) => {
      pending += chunk.toString('latin1');
      for (let end = pending.indexOf('\r\n\r\n'); end >= 0; end = pending.indexOf('\r\n\r\n')) {
        const head = pending.slice(0, end);
        pending = pending.slice(end + 4);
        state.requests.push(head);
        answer(socket, head, state.requests.length - 1);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, state };
}

/** Counts the TCP connections an http.Server accepts. */
function countConnections(server: Server): { count: number } {
  const counter = { count: 0 };
  server.on('connection', () => counter.count++);
  return counter;
}

/** A normal request through the gateway answers 200 (the gateway keeps serving). */
async function stillServes(gatewayUrl: string): Promise<void> {
  const res = await request(`${gatewayUrl}/still/alive`);
  assert.equal(res.statusCode, 200);
  await res.body.dump();
}

// 1. Pipelining

test('pipelining: three requests in one write are answered in order on the same connection, which stays open', async (t) => {
  const backend = await echoBackend(t, (req, res, body) => {
    // The first answer is the slowest: the order must still be the order of the requests.
    const delay = req.url === '/first' ? 100 : 0;
    setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ url: req.url, body: body.toString() })), delay);
  });
  const gw = await gatewayWith(t, doc({ url: backend.url }));
  const client = await RawClient.open(t, gw.proxy);
  client.write(
    'GET /first HTTP/1.1\r\nHost: a\r\n\r\n' + 'POST /second HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello' + 'GET /third HTTP/1.1\r\nHost: a\r\n\r\n',
  );
  for (const [url, body] of [
    ['/first', ''],
    ['/second', 'hello'],
    ['/third', ''],
  ]) {
    const res = await client.response();
    assert.equal(res.status, 200);
    assert.deepEqual(JSON.parse(res.body.toString()), { url, body });
    assert.notEqual(header(res, 'connection'), 'close');
  }
  assert.equal(client.leftover.length, 0, 'nothing after the three answers');
  // The connection is still usable.
  client.write('GET /fourth HTTP/1.1\r\nHost: a\r\n\r\n');
  const fourth = await client.response();
  assert.equal(JSON.parse(fourth.body.toString()).url, '/fourth');
  assert.equal(client.closed, false);
  assert.deepEqual(
    backend.seen.map((s) => s.url),
    ['/first', '/second', '/third', '/fourth'],
  );
});

test('pipelining: a bad request behind a good one: the good one is answered whole, the bad one never reaches the upstream, the connection closes', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc({ url: backend.url }));
  const client = await RawClient.open(t, gw.proxy);
  client.write('GET /good HTTP/1.1\r\nHost: a\r\n\r\nGET /bad HTTP/1.1\r\nHost: a\r\nBad Header: x\r\n\r\n');
  const good = await client.response();
  assert.equal(good.status, 200);
  assert.equal(good.truncated, false);
  assert.equal(JSON.parse(good.body.toString()).url, '/good');
  await client.serverClosed();
  // Whatever follows the good answer can only be the 400 for the bad request.
  if (client.leftover.length > 0) assert.match(client.leftover.toString('latin1'), /^HTTP\/1\.1 400 [^]*"message":"Bad request"/);
  assert.deepEqual(
    backend.seen.map((s) => s.url),
    ['/good'],
  );
});

// 2. HTTP/1.0 clients

/** An upstream whose answers carry a Content-Length (node:http chunks what writeHead sends without one). */
const fixedLength = (req: IncomingMessage, res: ServerResponse) => {
  const body = JSON.stringify({ url: req.url });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
};

test('HTTP/1.0 client without keep-alive: a Content-Length answer, then the gateway closes the connection', async (t) => {
  const backend = await echoBackend(t, fixedLength);
  const gw = await gatewayWith(t, doc({ url: backend.url }));
  const { res, client } = await exchange(t, gw.proxy, 'GET /old HTTP/1.0\r\nHost: a\r\n\r\n');
  assert.equal(res.status, 200);
  assert.equal(res.chunked, false, 'no chunked encoding for HTTP/1.0');
  assert.equal(Number(header(res, 'content-length')), res.body.length);
  assert.equal(JSON.parse(res.body.toString()).url, '/old');
  assert.equal(header(res, 'connection'), 'close');
  await client.serverClosed();
  assert.equal(client.leftover.length, 0);
});

test('HTTP/1.0 client with Connection: keep-alive: a Content-Length answer and the connection stays open for the next request', async (t) => {
  const backend = await echoBackend(t, fixedLength);
  const gw = await gatewayWith(t, doc({ url: backend.url }));
  const client = await RawClient.open(t, gw.proxy);
  for (const path of ['/one', '/two']) {
    client.write(`GET ${path} HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\n\r\n`);
    const res = await client.response();
    assert.equal(res.status, 200);
    assert.equal(res.chunked, false);
    assert.equal(Number(header(res, 'content-length')), res.body.length);
    assert.equal(JSON.parse(res.body.toString()).url, path);
    assert.match(header(res, 'connection') ?? '', /keep-alive/i);
    assert.equal(client.ended, false);
  }
  // Without keep-alive on the next one, the gateway closes after it.
  client.write('GET /three HTTP/1.0\r\nHost: a\r\n\r\n');
  const last = await client.response();
  assert.equal(JSON.parse(last.body.toString()).url, '/three');
  await client.serverClosed();
});

test('HTTP/1.0 client and an upstream streaming without a length: the body is close-delimited, whole, and the connection closes (with or without keep-alive)', async (t) => {
  const parts = ['alpha-', 'beta-', 'gamma'];
  const backend = await echoBackend(t, (_req, res) => {
    // No Content-Length: node:http streams it chunked to the gateway.
    res.writeHead(200, { 'content-type': 'text/plain' });
    let i = 0;
    const next = () => (i < parts.length ? (res.write(parts[i++]), setImmediate(next)) : res.end());
    next();
  });
  const gw = await gatewayWith(t, doc({ url: backend.url }));
  for (const connection of ['', 'Connection: keep-alive\r\n']) {
    const { res, client } = await exchange(t, gw.proxy, `GET /stream HTTP/1.0\r\nHost: a\r\n${connection}\r\n`);
    assert.equal(res.status, 200);
    assert.equal(res.chunked, false, 'HTTP/1.0 gets no chunked encoding');
    assert.equal(header(res, 'content-length'), undefined);
    assert.equal(res.closeDelimited, true);
    assert.equal(res.body.toString(), parts.join(''));
    assert.equal(header(res, 'connection'), 'close', `the end of the body is the end of the connection (${JSON.stringify(connection)})`);
    assert.equal(client.ended, true);
  }
});

// 3. Request bodies

test('a chunked request body is streamed to the upstream chunked, intact, before the client has finished sending it', async (t) => {
  let firstBytes!: () => void;
  const firstBytesSeen = new Promise<void>((resolve) => (firstBytes = resolve));
  const upstream = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      chunks.push(c);
      firstBytes();
    });
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ te: req.headers['transfer-encoding'] ?? null, cl: req.headers['content-length'] ?? null, body: body.toString('latin1') }));
    });
  });
  const url = await listenOn(t, upstream);
  const gw = await gatewayWith(t, doc({ url }));
  const client = await RawClient.open(t, gw.proxy);
  client.write('POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n');
  // The upstream has the first chunk while the client has not sent the rest.
  await firstBytesSeen;
  client.write('1\r\n \r\nA\r\n0123456789\r\n');
  client.write('0\r\n\r\n');
  const res = await client.response();
  assert.equal(res.status, 200);
  assert.deepEqual(JSON.parse(res.body.toString()), { te: 'chunked', cl: null, body: 'hello 0123456789' });
});

test('what the upstream receives for a chunked request body: chunked framing on the wire, no Content-Length, the same bytes', async (t) => {
  let wire = '';
  let done!: () => void;
  const complete = new Promise<void>((resolve) => (done = resolve));
  const server = createNetServer((socket) => {
    socket.on('data', (chunk: Buffer) => {
      wire += chunk.toString('latin1');
      if (wire.endsWith('0\r\n\r\n')) {
        socket.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
        done();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const gw = await gatewayWith(t, doc({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
  const { res } = await exchange(t, gw.proxy, 'POST /u HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n');
  await complete;
  assert.equal(res.status, 200);
  const [head, body] = wire.split('\r\n\r\n', 2) as [string, string];
  assert.match(head, /^POST \/u HTTP\/1\.1\r\n/);
  assert.match(head, /\r\nTransfer-Encoding: chunked(\r\n|$)/i);
  assert.doesNotMatch(head, /content-length/i);
  const decoded = body
    .split('\r\n')
    .filter((_, i) => i % 2 === 1)
    .join('');
  assert.equal(decoded, 'abcdefg', `chunked body on the wire: ${JSON.stringify(body)}`);
});

test('a Content-Length request body is forwarded as is, with its Content-Length and no chunking', async (t) => {
  const backend = await echoBackend(t, (req, res, body) =>
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ te: req.headers['transfer-encoding'] ?? null, cl: req.headers['content-length'], sha: sha256(body) })),
  );
  const gw = await gatewayWith(t, doc({ url: backend.url }));
  const payload = randomBytes(100_000);
  const client = await RawClient.open(t, gw.proxy);
  client.write(`PUT /blob HTTP/1.1\r\nHost: a\r\nContent-Type: application/octet-stream\r\nContent-Length: ${payload.length}\r\n\r\n`);
  client.write(payload);
  const res = await client.response();
  assert.equal(res.status, 200);
  assert.deepEqual(JSON.parse(res.body.toString()), { te: null, cl: String(payload.length), sha: sha256(payload) });
  assert.equal(backend.seen[0]!.method, 'PUT');
});

// 4. Upstream answers

test('a chunked upstream answer reaches an HTTP/1.1 client chunked, whole', async (t) => {
  const upstream = await rawUpstream(t, (socket) =>
    socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n'),
  );
  const gw = await gatewayWith(t, doc({ url: upstream.url }));
  const client = await RawClient.open(t, gw.proxy);
  client.write('GET /c HTTP/1.1\r\nHost: a\r\n\r\n');
  const res = await client.response();
  assert.equal(res.status, 200);
  assert.equal(res.chunked, true);
  assert.equal(header(res, 'content-length'), undefined);
  assert.equal(res.body.toString(), 'hello world');
  // Still open: a second request on the same connection.
  client.write('GET /c HTTP/1.1\r\nHost: a\r\n\r\n');
  assert.equal((await client.response()).body.toString(), 'hello world');
});

test('an upstream answer without a length (ended by closing) reaches the client whole, chunked for HTTP/1.1, and the client connection stays open', async (t) => {
  const big = 'x'.repeat(200_000);
  const upstream = await rawUpstream(t, (socket) => {
    socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n');
    socket.write('start-');
    setImmediate(() => socket.end(`${big}-end`));
  });
  const gw = await gatewayWith(t, doc({ url: upstream.url }));
  const client = await RawClient.open(t, gw.proxy);
  for (let i = 0; i < 2; i++) {
    client.write('GET /eof HTTP/1.1\r\nHost: a\r\n\r\n');
    const res = await client.response();
    assert.equal(res.status, 200);
    assert.equal(res.truncated, false);
    assert.equal(res.chunked, true);
    assert.equal(res.body.toString(), `start-${big}-end`);
  }
  assert.equal(upstream.state.connections, 2, 'a connection read to EOF is not reused');
});

test('HEAD: the upstream’s headers (Content-Length included) and no body; the connection stays in step', async (t) => {
  const upstream = await rawUpstream(t, (socket, head) => {
    if (head.startsWith('HEAD ')) socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\nETag: "v1"\r\n\r\n');
    else socket.write('HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nget');
  });
  const gw = await gatewayWith(t, doc({ url: upstream.url }));
  const client = await RawClient.open(t, gw.proxy);
  client.write('HEAD /h HTTP/1.1\r\nHost: a\r\n\r\n');
  const res = await client.response({ bodyless: true });
  assert.equal(res.status, 200);
  assert.equal(header(res, 'content-length'), '1000');
  assert.equal(header(res, 'etag'), '"v1"');
  assert.equal(header(res, 'transfer-encoding'), undefined);
  // The next answer starts right after the head: no body bytes came in between.
  client.write('GET /g HTTP/1.1\r\nHost: a\r\n\r\n');
  const next = await client.response();
  assert.equal(next.body.toString(), 'get');
  assert.equal(upstream.state.connections, 1, 'the upstream connection survived the HEAD');
  assert.match(upstream.state.requests[0]!, /^HEAD \/h HTTP\/1\.1/);
});

test('204 and 304 answers carry no body and no chunked framing; the connection stays in step', async (t) => {
  const upstream = await rawUpstream(t, (socket, head) => {
    if (head.startsWith('GET /204')) socket.write('HTTP/1.1 204 No Content\r\nX-Kind: none\r\n\r\n');
    else if (head.startsWith('GET /304')) socket.write('HTTP/1.1 304 Not Modified\r\nETag: "e"\r\n\r\n');
    else socket.write('HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext');
  });
  const gw = await gatewayWith(t, doc({ url: upstream.url }));
  const client = await RawClient.open(t, gw.proxy);
  for (const status of [204, 304]) {
    client.write(`GET /${status} HTTP/1.1\r\nHost: a\r\n\r\n`);
    const res = await client.response();
    assert.equal(res.status, status);
    assert.equal(header(res, 'transfer-encoding'), undefined, `${status} is not chunked`);
    client.write('GET /after HTTP/1.1\r\nHost: a\r\n\r\n');
    const after = await client.response();
    assert.equal(after.status, 200);
    assert.equal(after.body.toString(), 'next', `nothing was sent as a body of the ${status}`);
  }
  assert.equal(upstream.state.connections, 1);
});

test('a 103 Early Hints (and a stray 100 Continue) before the answer: the client gets the 200', async (t) => {
  const upstream = await rawUpstream(t, (socket) =>
    socket.write(
      'HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n' +
        'HTTP/1.1 100 Continue\r\n\r\n' +
        'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nfinal',
    ),
  );
  const gw = await gatewayWith(t, doc({ url: upstream.url }));
  const client = await RawClient.open(t, gw.proxy);
  client.write('GET /hints HTTP/1.1\r\nHost: a\r\n\r\n');
  let res = await client.response();
  // Forwarding the 103 itself would be allowed too; what must come is the 200 with its body.
  while (res.status < 200) res = await client.response();
  assert.equal(res.status, 200);
  assert.equal(res.body.toString(), 'final');
  client.write('GET /hints HTTP/1.1\r\nHost: a\r\n\r\n');
  res = await client.response();
  while (res.status < 200) res = await client.response();
  assert.equal(res.body.toString(), 'final');
  assert.equal(upstream.state.connections, 1, 'the connection is kept after interim answers');
});

test('a garbage upstream answer (NOT HTTP) → 502 in Kong’s JSON error shape', async (t) => {
  const upstream = await rawUpstream(t, (socket) => socket.write('NOT HTTP\r\n\r\n'));
  const gw = await gatewayWith(t, doc({ url: upstream.url }));
  const res = await request(`${gw.proxy}/garbage`);
  assert.equal(res.statusCode, 502);
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
  const body = (await res.body.json()) as { message: string; request_id: string };
  assert.equal(body.message, 'An invalid response was received from the upstream server');
  assert.match(body.request_id, REQUEST_ID);
  assert.equal(res.headers['x-kong-request-id'], body.request_id);
});

test('an upstream answer head over 64 KiB → 502', async (t) => {
  const upstream = await rawUpstream(t, (socket) => {
    socket.write('HTTP/1.1 200 OK\r\n');
    // Many headers in several writes: the limit is on the whole head, not one read.
    for (let i = 0; i < 40; i++) socket.write(`X-Filler-${i}: ${'f'.repeat(2000)}\r\n`);
    socket.write('Content-Length: 2\r\n\r\nok');
  });
  const gw = await gatewayWith(t, doc({ url: upstream.url }));
  const res = await request(`${gw.proxy}/big-head`);
  assert.equal(res.statusCode, 502);
  assert.equal(((await res.body.json()) as { message: string }).message, 'An invalid response was received from the upstream server');
});

test('an upstream answer head just under 64 KiB passes', async (t) => {
  const upstream = await rawUpstream(t, (socket) => socket.write(`HTTP/1.1 200 OK\r\nX-Filler: ${'f'.repeat(60_000)}\r\nContent-Length: 2\r\n\r\nok`));
  const gw = await gatewayWith(t, doc({ url: upstream.url }));
  const { res } = await exchange(t, gw.proxy, 'GET /large-head HTTP/1.1\r\nHost: a\r\n\r\n');
  assert.equal(res.status, 200);
  assert.equal(header(res, 'x-filler')!.length, 60_000);
  assert.equal(res.body.toString(), 'ok');
});

test('an upstream that closes mid-body (less than its Content-Length) → the client’s connection is cut, not a complete answer', async (t) => {
  const upstream = await rawUpstream(t, (socket) => {
    socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n');
    socket.end(Buffer.alloc(1000, 'p'));
  });
  const gw = await gatewayWith(t, doc({ url: upstream.url }));
  const client = await RawClient.open(t, gw.proxy);
  client.write('GET /partial HTTP/1.1\r\nHost: a\r\n\r\n');
  const res = await client.response();
  assert.equal(res.status, 200);
  assert.equal(header(res, 'content-length'), '100000');
  assert.equal(res.truncated, true, 'the client can tell the answer is incomplete');
  assert.ok(res.body.length < 100_000);
  await client.serverClosed();
  // Through a normal client too: the body fails rather than ending short.
  const viaUndici = await request(`${gw.proxy}/partial`);
  await assert.rejects(viaUndici.body.arrayBuffer());
});

test('an upstream that closes mid-body of a chunked answer → the client’s chunked answer is cut, no terminating chunk', async (t) => {
  const upstream = await rawUpstream(t, (socket) => socket.end('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n'));
  const gw = await gatewayWith(t, doc({ url: upstream.url }));
  const client = await RawClient.open(t, gw.proxy);
  client.write('GET /partial HTTP/1.1\r\nHost: a\r\n\r\n');
  const res = await client.response();
  assert.equal(res.status, 200);
  assert.equal(res.truncated, true);
  await client.serverClosed();
});

// 5. Smuggling and framing refusals

const REFUSED: [string, string][] = [
  ['Content-Length together with Transfer-Encoding', 'POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
  [
    'Transfer-Encoding together with Content-Length (other order)',
    'POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n',
  ],
  ['Transfer-Encoding: gzip', 'POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\nabcd'],
  ['Transfer-Encoding: chunked, chunked', 'POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n'],
  ['Transfer-Encoding: chunked on two lines', 'POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
  ['Transfer-Encoding: gzip, chunked', 'POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n'],
  ['a space before the colon of a header', 'GET /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n'],
  ['an obs-fold continuation line', 'GET /x HTTP/1.1\r\nHost: a\r\nX-Folded: first\r\n second\r\n\r\n'],
  ['a NUL inside a header value', 'GET /x HTTP/1.1\r\nHost: a\r\nX-Nul: a\x00b\r\n\r\n'],
  ['a bare CR inside a header value', 'GET /x HTTP/1.1\r\nHost: a\r\nX-Cr: a\rb\r\n\r\n'],
  ['a control character in the request target', 'GET /x\x01y HTTP/1.1\r\nHost: a\r\n\r\n'],
  ['DEL in the request target', 'GET /x\x7fy HTTP/1.1\r\nHost: a\r\n\r\n'],
  ['a missing Host on HTTP/1.1', 'GET /x HTTP/1.1\r\nAccept: */*\r\n\r\n'],
  ['an HTTP/2.0 request line', 'GET /x HTTP/2.0\r\nHost: a\r\n\r\n'],
  ['a duplicate Host', 'GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'],
  ['a Content-Length that is not a number', 'POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: +4\r\n\r\nabcd'],
];

test('smuggling and framing refusals: each bad request gets 400 Bad request in Kong’s shape, the connection closed, the upstream never sees it, and a fresh request works', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc({ url: backend.url }));
  for (const [name, bytes] of REFUSED) {
    await t.test(name, async (st) => {
      const { res, client } = await exchange(st, gw.proxy, bytes);
      assert.equal(res.status, 400, name);
      assert.equal(header(res, 'content-type'), 'application/json; charset=utf-8');
      const body = JSON.parse(res.body.toString()) as { message: string; request_id: string };
      assert.equal(body.message, 'Bad request');
      assert.match(body.request_id, REQUEST_ID);
      assert.equal(header(res, 'connection'), 'close');
      await client.serverClosed();
      assert.equal(client.leftover.length, 0, 'no second answer (nothing smuggled behind the first)');
      await stillServes(gw.proxy);
      assert.deepEqual(
        backend.seen.map((s) => s.url),
        backend.seen.map(() => '/still/alive'),
        `the upstream saw only the good requests (${name})`,
      );
    });
  }
});

// 6. Connect timeout

/**
 * An address that accepts no connection in time: Debian's python3 listens
 * with a backlog of 0, never accepts, and fills the queue with its own
 * connections, so further SYNs are dropped.
 */
async function blackHole(t: After): Promise<number> {
  const python = debianProgram('python3', DEBIAN_PYTHON);
  const script = [
    'import socket, sys',
    "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(0)",
    'port = s.getsockname()[1]',
    'held = []',
    'for _ in range(3):',
    '    c = socket.socket(); c.setblocking(False)',
    "    try: c.connect(('127.0.0.1', port))",
    '    except BlockingIOError: pass',
    '    held.append(c)',
    'print(port, flush=True)',
    'sys.stdin.read()',
  ].join('\n');
  const child = spawn(python, ['-c', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.after(async () => {
    if (child.exitCode !== null) return;
    const exited = once(child, 'exit');
    child.stdin.end();
    await exited;
  });
  const [line] = await eventWithin<[Buffer]>(child.stdout, 'data', 'the first line the gateway process prints', 60_000);
  return Number(line.toString().trim());
}

test('A.4 status table, row "upstream timeout" (connect phase): an upstream that never completes the handshake → 504 The upstream server is timing out, after connect_timeout with retries: 1', async (t) => {
  const port = await blackHole(t);
  const gw = await gatewayWith(t, doc({ url: `http://127.0.0.1:${port}`, connect_timeout: 300, retries: 1 }));
  const res = await request(`${gw.proxy}/never`, { headersTimeout: 30_000 });
  assert.equal(res.statusCode, 504);
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
  const body = (await res.body.json()) as { message: string; request_id: string };
  assert.equal(body.message, 'The upstream server is timing out');
  assert.match(body.request_id, REQUEST_ID);
});

// 7. Keep-alive to the upstream

test('sequential requests through the gateway reuse one upstream keep-alive connection', async (t) => {
  const backend = await echoBackend(t);
  const connections = countConnections(backend.server);
  const gw = await gatewayWith(t, doc({ url: backend.url }));
  for (let i = 0; i < 6; i++) {
    // A new client connection each time: upstream reuse is the gateway's own doing.
    const res = await request(`${gw.proxy}/n/${i}`, { reset: true });
    assert.equal(res.statusCode, 200);
    await res.body.dump();
  }
  assert.equal(backend.seen.length, 6);
  assert.equal(connections.count, 1);
});

test('an upstream that closes idle keep-alive connections (node:http keepAliveTimeout) causes no 502 on the next request, even with retries: 0', async (t) => {
  const backend = await echoBackend(t);
  backend.server.keepAliveTimeout = 50;
  const closedOnUpstream: Promise<unknown>[] = [];
  backend.server.on('connection', (socket: Socket) => closedOnUpstream.push(once(socket, 'close')));
  const gw = await gatewayWith(t, doc({ url: backend.url, retries: 0 }));
  for (let i = 0; i < 2; i++) {
    const res = await request(`${gw.proxy}/idle/${i}`);
    assert.equal(res.statusCode, 200, `request ${i}`);
    await res.body.dump();
    // The upstream has closed the idle connection the gateway holds in its pool.
    await closedOnUpstream[i];
  }
  assert.equal(backend.seen.length, 2);
  assert.equal(closedOnUpstream.length, 2);
});

test('an upstream that ends (FIN) or resets each connection soon after answering causes no 502 on the next request, even with retries: 0', async (t) => {
  for (const how of ['end', 'destroy'] as const) {
    const closed: Promise<unknown>[] = [];
    const upstream = await rawUpstream(t, (socket) => {
      closed.push(once(socket, 'close'));
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
      setTimeout(() => (how === 'end' ? socket.end() : socket.resetAndDestroy()), 20);
    });
    const gw = await gatewayWith(t, doc({ url: upstream.url, retries: 0 }));
    for (let i = 0; i < 3; i++) {
      const res = await request(`${gw.proxy}/idle/${i}`);
      assert.equal(res.statusCode, 200, `${how}: request ${i}`);
      assert.equal(await res.body.text(), 'ok');
      await closed[i];
    }
    assert.equal(upstream.state.connections, 3);
  }
});

test('an upstream that closes a kept-alive connection just as the next request arrives: the request is sent again on a new connection (retries: 0)', async (t) => {
  // The race a keep-alive timeout makes: the second request on a connection meets its close.
  const upstream = await rawUpstream(t, (socket) => {
    const onThisSocket = (socket as Socket & { served?: number }).served ?? 0;
    (socket as Socket & { served?: number }).served = onThisSocket + 1;
    if (onThisSocket === 0) socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    else socket.destroy();
  });
  const gw = await gatewayWith(t, doc({ url: upstream.url, retries: 0 }));
  for (let i = 0; i < 3; i++) {
    const res = await request(`${gw.proxy}/race/${i}`);
    assert.equal(res.statusCode, 200, `request ${i}`);
    assert.equal(await res.body.text(), 'ok');
  }
  assert.equal(upstream.state.connections, 3);
});

// 8. Half-closed clients

test('a client that sends its request and half-closes still gets its full answer', async (t) => {
  const payload = randomBytes(1024 * 1024);
  const backend = await echoBackend(t, (_req, res) => setTimeout(() => res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(payload), 20));
  const gw = await gatewayWith(t, doc({ url: backend.url }));
  const client = await RawClient.halfClosed(t, gw.proxy, 'POST /half HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc');
  const res = await client.response();
  assert.equal(res.status, 200);
  assert.equal(res.truncated, false);
  assert.equal(sha256(res.body), sha256(payload));
  await client.serverClosed();
  assert.equal(backend.seen[0]!.body.toString(), 'abc');
});

test('curl (a normal client) through the gateway: a chunked upload arrives chunked and intact', async (t) => {
  const curl = debianProgram('curl', '/usr/bin/curl');
  const backend = await echoBackend(t, (req, res, body) =>
    res.writeHead(200, { 'content-type': 'text/plain' }).end(`${req.headers['transfer-encoding'] ?? 'none'} ${sha256(body)}`),
  );
  const gw = await gatewayWith(t, doc({ url: backend.url }));
  const input = randomBytes(300_000);
  const child = spawn(curl, ['-sS', '--fail', '-H', 'Transfer-Encoding: chunked', '--data-binary', '@-', `${gw.proxy}/curl`], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stdin.end(input);
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const [code] = await eventWithin<[number]>(child, 'exit', 'the gateway process to exit', 60_000);
  assert.equal(code, 0);
  assert.equal(out, `chunked ${sha256(input)}`);
});

// 9. Large bodies with backpressure

const BIG = 20 * 1024 * 1024;

test('a 20 MB upload through the gateway to an upstream that reads slowly arrives intact (sha256)', async (t) => {
  const payload = randomBytes(BIG);
  const upstream = createServer((req: IncomingMessage, res) => {
    const hash = createHash('sha256');
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      hash.update(chunk);
      bytes += chunk.length;
      // A slow reader: every chunk is followed by a pause.
      req.pause();
      setTimeout(() => req.resume(), 1);
    });
    req.on('end', () =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ bytes, sha: hash.digest('hex'), te: req.headers['transfer-encoding'] ?? null })),
    );
  });
  const url = await listenOn(t, upstream);
  const gw = await gatewayWith(t, doc({ url }));
  // Streamed from the client in 64 KiB pieces (chunked), never whole in one write.
  const pieces = function* () {
    for (let at = 0; at < payload.length; at += 65536) yield payload.subarray(at, at + 65536);
  };
  const res = await request(`${gw.proxy}/upload`, { method: 'POST', body: Readable.from(pieces()), headersTimeout: 60_000, bodyTimeout: 60_000 });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(await res.body.json(), { bytes: BIG, sha: sha256(payload), te: 'chunked' });
});

test('a 20 MB download through the gateway to a client that reads slowly arrives intact (sha256), the upstream held back by backpressure', async (t) => {
  const payload = randomBytes(BIG);
  let upstreamSawBackpressure = false;
  const upstream = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(payload.length) });
    let at = 0;
    const pump = () => {
      while (at < payload.length) {
        const piece = payload.subarray(at, at + 65536);
        at += piece.length;
        if (!res.write(piece)) {
          upstreamSawBackpressure = true;
          res.once('drain', pump);
          return;
        }
      }
      res.end();
    };
    pump();
  });
  const url = await listenOn(t, upstream);
  const gw = await gatewayWith(t, doc({ url }));
  const received = await new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
    const req = httpRequest(`${gw.proxy}/download`, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        // A slow reader: pause after every chunk.
        res.pause();
        setTimeout(() => res.resume(), 1);
      });
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
  assert.equal(received.status, 200);
  assert.equal(received.body.length, BIG);
  assert.equal(sha256(received.body), sha256(payload));
  assert.ok(upstreamSawBackpressure, 'the upstream had to wait for the slow client');
});
// Crashes and wrong answers found while testing the new HTTP stack, kept as regression tests.

test('a bad chunk size (zz) in a request body → 400 Bad request, connection closed, the gateway keeps serving (cold upstream pool)', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc({ url: backend.url }));
  const { res, client } = await exchange(t, gw.proxy, 'POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n');
  assert.equal(res.status, 400);
  assert.equal(JSON.parse(res.body.toString()).message, 'Bad request');
  await client.serverClosed();
  await stillServes(gw.proxy);
  assert.deepEqual(
    backend.seen.map((s) => s.url),
    ['/still/alive'],
  );
});

test('a bad chunk size (zz) in a request body → 400 Bad request, not 502 (warm upstream pool)', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc({ url: backend.url }));
  await stillServes(gw.proxy);
  const { res, client } = await exchange(t, gw.proxy, 'POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n');
  assert.equal(res.status, 400);
  assert.equal(JSON.parse(res.body.toString()).message, 'Bad request');
  await client.serverClosed();
  await stillServes(gw.proxy);
  assert.deepEqual(
    backend.seen.map((s) => s.url),
    ['/still/alive', '/still/alive'],
  );
});

test('a bad chunk size (zz) in a body that key-auth reads (key_in_body) → 400 Bad request, not 500; nothing reaches the upstream', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, {
    _format_version: '3.0',
    services: [{ name: 'svc', url: backend.url, routes: [{ paths: ['/'], plugins: [{ name: 'key-auth', config: { key_in_body: true } }] }] }],
    consumers: [{ username: 'alice', keyauth_credentials: [{ key: 'alice-key' }] }],
  });
  const { res, client } = await exchange(
    t,
    gw.proxy,
    'POST /x HTTP/1.1\r\nHost: a\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\napikey=alice-key\r\n0\r\n\r\n',
  );
  assert.equal(res.status, 400);
  assert.equal(JSON.parse(res.body.toString()).message, 'Bad request');
  await client.serverClosed();
  const form = await request(`${gw.proxy}/form`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'apikey=alice-key',
  });
  assert.equal(form.statusCode, 200);
  await form.body.dump();
  assert.deepEqual(
    backend.seen.map((s) => s.url),
    ['/form'],
  );
});

test('a client that half-closes in the middle of a pipelined request body does not crash the gateway', async (t) => {
  const backend = await echoBackend(t, (_req, res) => setTimeout(() => res.writeHead(200, { 'content-length': '2' }).end('ok'), 100));
  const gw = await gatewayWith(t, doc({ url: backend.url }));
  const client = await RawClient.halfClosed(t, gw.proxy, 'GET /slow HTTP/1.1\r\nHost: a\r\n\r\nPOST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc');
  const first = await client.response();
  assert.equal(first.status, 200);
  await client.serverClosed();
  await stillServes(gw.proxy);
});

test('a client that half-closes in the middle of a body while the upstream connection is being opened does not crash the gateway', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc({ url: backend.url }));
  const client = await RawClient.halfClosed(t, gw.proxy, 'POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc');
  await client.serverClosed();
  await stillServes(gw.proxy);
});

test('a client that pipelines two requests and half-closes gets both answers, then the close', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc({ url: backend.url }));
  const client = await RawClient.halfClosed(t, gw.proxy, 'GET /one HTTP/1.1\r\nHost: a\r\n\r\nGET /two HTTP/1.1\r\nHost: a\r\n\r\n');
  assert.equal(JSON.parse((await client.response()).body.toString()).url, '/one');
  assert.equal(JSON.parse((await client.response()).body.toString()).url, '/two');
  await client.serverClosed();
});

test('pipelining: a bad request behind a good one gets its 400 after the good answer (as nginx does), then the close', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc({ url: backend.url }));
  const client = await RawClient.open(t, gw.proxy);
  client.write('GET /good HTTP/1.1\r\nHost: a\r\n\r\nGET /bad HTTP/1.1\r\nHost: a\r\nBad Header: x\r\n\r\n');
  const good = await client.response();
  assert.equal(JSON.parse(good.body.toString()).url, '/good');
  const bad = await client.response();
  assert.equal(bad.status, 400);
  assert.equal(JSON.parse(bad.body.toString()).message, 'Bad request');
  await client.serverClosed();
});
