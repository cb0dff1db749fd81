/**
 * The gateway's message parser (llhttp in WebAssembly) fed directly: every
 * way a message can be cut into socket reads gives the same heads and
 * bodies as the whole message, and its refusals carry llhttp's codes.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { HttpParsers, MessageParser, type MessageHead } from '../../src/gateway/http/parser.ts';

const parsers = new HttpParsers();

interface Seen {
  heads: MessageHead[];
  bodies: string[];
  completed: number;
}

function parser(kind: 'request' | 'response', maxHeaderSize = 16 * 1024): { parser: MessageParser; seen: Seen } {
  const seen: Seen = { heads: [], bodies: [], completed: 0 };
  const events = {
    onHead(head: MessageHead) {
      seen.heads.push(head);
      seen.bodies.push('');
      return false;
    },
    onBody(chunk: Buffer) {
      seen.bodies[seen.bodies.length - 1] += chunk.toString('latin1');
    },
    onComplete() {
      seen.completed++;
    },
  };
  return { parser: new MessageParser(parsers, kind, events, maxHeaderSize), seen };
}

/** Two pipelined requests: one with a chunked body, one with a Content-Length body. */
const REQUESTS =
  'POST /upload?x=%2F HTTP/1.1\r\nHost: example.test\r\nX-Long-Header-Name: a value, with commas  \r\nTransfer-Encoding: chunked\r\n\r\n' +
  '5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n' +
  'PUT /second HTTP/1.1\r\nHost: example.test\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbody';

function parseInPieces(text: string, cuts: number[]): Seen {
  const { parser: p, seen } = parser('request');
  let from = 0;
  for (const cut of [...cuts, text.length]) {
    const error = p.execute(Buffer.from(text.slice(from, cut), 'latin1'));
    assert.equal(error, null, `cut at ${cuts.join(',')}: ${error?.message}`);
    from = cut;
  }
  p.close();
  return seen;
}

test('a message cut at every byte, and one byte per read, parses the same as in one read', () => {
  const whole = parseInPieces(REQUESTS, []);
  assert.equal(whole.completed, 2);
  assert.deepEqual(
    whole.heads.map((h) => [h.method, h.url, h.versionMinor, h.keepAlive, h.hasBody]),
    [
      ['POST', '/upload?x=%2F', 1, true, true],
      ['PUT', '/second', 1, false, true],
    ],
  );
  assert.deepEqual(whole.heads[0]!.rawHeaders, ['Host', 'example.test', 'X-Long-Header-Name', 'a value, with commas', 'Transfer-Encoding', 'chunked']);
  assert.deepEqual(whole.bodies, ['hello, world', 'body']);
  const strip = (seen: Seen) => ({ heads: seen.heads, bodies: seen.bodies, completed: seen.completed });
  for (let cut = 1; cut < REQUESTS.length; cut++) assert.deepEqual(strip(parseInPieces(REQUESTS, [cut])), strip(whole), `cut at ${cut}`);
  const everyByte = Array.from({ length: REQUESTS.length - 1 }, (_, i) => i + 1);
  assert.deepEqual(strip(parseInPieces(REQUESTS, everyByte)), strip(whole));
});

test('a response without a length is read to the end: finish() completes it; a cut Content-Length body is an error', () => {
  const eof = parser('response');
  assert.equal(eof.parser.execute(Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\npart one, ')), null);
  assert.equal(eof.parser.execute(Buffer.from('part two')), null);
  assert.equal(eof.seen.completed, 0);
  assert.equal(eof.parser.finish(), null);
  assert.equal(eof.seen.completed, 1);
  assert.equal(eof.seen.bodies[0], 'part one, part two');
  assert.equal(eof.seen.heads[0]!.keepAlive, false);

  const cut = parser('response');
  assert.equal(cut.parser.execute(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort')), null);
  assert.equal(cut.parser.finish()?.code, 'HPE_INVALID_EOF_STATE');
  assert.equal(cut.seen.completed, 0);
});

test("refusals carry llhttp's error codes, and the gateway's own checks still apply on top", () => {
  const cases: [string, string][] = [
    ['GET / HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n', 'HPE_INVALID_HEADER_TOKEN'],
    ['GET / HTTP/1.1\r\nHost: a\r\nX: a\x01b\r\n\r\n', 'HPE_INVALID_HEADER_TOKEN'],
    ['GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx', 'HPE_UNEXPECTED_CONTENT_LENGTH'],
    ['POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', 'HPE_INVALID_CHUNK_SIZE'],
    ['GET / HTTP/1.1\r\n\r\n', 'HPE_INVALID_HEADER_TOKEN'],
    ['GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n', 'HPE_INVALID_HEADER_TOKEN'],
  ];
  for (const [text, code] of cases) {
    const { parser: p, seen } = parser('request');
    assert.equal(p.execute(Buffer.from(text, 'latin1'))?.code, code, JSON.stringify(text));
    assert.equal(seen.completed, 0, JSON.stringify(text));
    p.close();
  }
});

test('a head over the limit is refused as HPE_HEADER_OVERFLOW, whole or arriving in pieces', () => {
  const big = `GET / HTTP/1.1\r\nHost: a\r\nX-Big: ${'v'.repeat(2000)}\r\n\r\n`;
  const whole = parser('request', 1024);
  assert.equal(whole.parser.execute(Buffer.from(big))?.code, 'HPE_HEADER_OVERFLOW');
  // A head that never ends stops at the parser's own bound, long before memory runs out.
  const endless = parser('request', 1024);
  assert.equal(endless.parser.execute(Buffer.from('GET / HTTP/1.1\r\nHost: a\r\nX-Endless: ')), null);
  assert.equal(endless.parser.midHead(), true);
  let error = null;
  for (let i = 0; i < 200 && !error; i++) error = endless.parser.execute(Buffer.alloc(1024, 'v'));
  assert.equal(error?.code, 'HPE_HEADER_OVERFLOW');
});

test('a closed parser refuses more input instead of touching freed memory', () => {
  const { parser: p } = parser('request');
  p.close();
  p.close();
  assert.equal(p.execute(Buffer.from('GET / HTTP/1.1\r\nHost: a\r\n\r\n'))?.code, 'HPE_CLOSED_CONNECTION');
  assert.equal(p.finish(), null);
});
