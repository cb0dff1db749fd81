import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { Pool, request } from 'undici';
import { startScoring } from '../../src/scoring/server.ts';
import type { RunningComponent } from '../../src/common/component.ts';
import { quiet, readMetric, tempDataDir } from '../helpers/index.ts';
import { argmax, breakBody, crosswordSvg, honeycombSvg, pictureBody, pictureFile, seededRandom, topIndices } from './fixtures.ts';

const HONEYCOMB = 599;
const CROSSWORD = 918;
const MAX_BODY = 4 * 1024 * 1024;

let scoring: RunningComponent;
let base: string;
let honeycomb: string;
/** Sends paths as written (no URL normalisation of `..` or `%2e%2e` on the client side). */
let client: Pool;

/** Run at the very end (the suite-level after), not when the before hook ends. */
const cleanups: (() => unknown)[] = [];

before(async () => {
  const dataDir = await tempDataDir({ after: (fn: () => unknown) => cleanups.push(fn) });
  scoring = await startScoring({ ...quiet, dataDir, maxBodyBytes: MAX_BODY });
  base = scoring.urls[0]!.url.replace(/\/score$/, '');
  honeycomb = await pictureBody(honeycombSvg());
  client = new Pool(base, { connections: 4 });
});
after(async () => {
  await client.close();
  await scoring.close();
  await Promise.all(cleanups.map((fn) => fn()));
});

async function post(path: string, body: string | Buffer | Readable, headers: Record<string, string> = { 'content-type': 'application/json' }) {
  const response = await client.request({ path, method: 'POST', body, headers });
  const text = await response.body.text();
  return { status: response.statusCode, headers: response.headers, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

interface ScoreBody {
  result: number[];
  time: number;
}

async function score(body: string | Buffer): Promise<ScoreBody> {
  const r = await post('/score', body);
  assert.equal(r.status, 200, r.text);
  assert.match(String(r.headers['content-type']), /^application\/json/);
  return r.json() as unknown as ScoreBody;
}

function assertErrorShape(r: { status: number; text: string }, status: number, message?: RegExp): void {
  assert.equal(r.status, status, r.text);
  const body = JSON.parse(r.text) as { error?: { code?: unknown; message?: unknown } };
  assert.equal(typeof body.error?.code, 'string', r.text);
  assert.equal(typeof body.error?.message, 'string', r.text);
  if (message) assert.match(body.error!.message as string, message);
}

test('R-SCORE-1 GET /ready answers 200 once the model is loaded, /health too', async () => {
  for (const path of ['/ready', '/health']) {
    const response = await request(base + path);
    assert.equal(response.statusCode, 200);
    await response.body.dump();
  }
});

test('R-SCORE-1 R-SCORE-3 a drawn honeycomb picture is classified as honeycomb (class 599)', async () => {
  const answer = await score(honeycomb);
  assert.equal(argmax(answer.result), HONEYCOMB);
  assert.ok(answer.result[HONEYCOMB]! > 0.5, `p(honeycomb) = ${answer.result[HONEYCOMB]}`);
});

test('R-SCORE-3 result is 1000 softmax probabilities that sum to 1 ± 1e-4', async () => {
  const answer = await score(honeycomb);
  assert.equal(answer.result.length, 1000);
  assert.ok(answer.result.every((p) => typeof p === 'number' && p >= 0 && p <= 1));
  const sum = answer.result.reduce((a, b) => a + b, 0);
  assert.ok(Math.abs(sum - 1) <= 1e-4, `sum ${sum}`);
});

test('R-SCORE-4 time is the positive inference time in seconds', async () => {
  const answer = await score(honeycomb);
  assert.equal(typeof answer.time, 'number');
  assert.ok(answer.time > 0 && answer.time < 30, `time ${answer.time}`);
});

test('R-SCORE-1 JPEG, PNG and WebP files of another picture give its class (crossword puzzle, 918)', async () => {
  for (const format of ['jpeg', 'png', 'webp'] as const) {
    const answer = await score(await pictureBody(await pictureFile(crosswordSvg(), format)));
    assert.equal(argmax(answer.result), CROSSWORD, format);
  }
});

test('R-SCORE-5 integers 0..255 and floats 0..1 for the same image give the same top-5', async () => {
  const integers = await score(honeycomb);
  const floats = await score(await pictureBody(honeycombSvg(), 'floats'));
  assert.deepEqual(topIndices(floats.result, 5), topIndices(integers.result, 5));
  for (let i = 0; i < 1000; i++) assert.ok(Math.abs(floats.result[i]! - integers.result[i]!) < 1e-3);
});

test('R-SCORE-5 floats 0..255 written with a fraction (255.0) are read as pixels', async () => {
  const asFloats = honeycomb.replace(/(\d+)(?=[,\]])/g, '$1.0');
  assert.notEqual(asFloats, honeycomb);
  assert.deepEqual(topIndices((await score(asFloats)).result, 5), topIndices((await score(honeycomb)).result, 5));
});

test('R-SCORE-5 pixel values outside 0..255 are refused with a 400 naming the range', async () => {
  const tooBright = honeycomb.replace(/\[\[\[\[\d+/, '[[[[300');
  assertErrorShape(await post('/score', tooBright), 400, /outside 0\.\.255/);
});

function bodyOfShape(shape: number[]): string {
  const build = (level: number): string => (level === shape.length ? '1' : `[${Array.from({ length: shape[level]! }, () => build(level + 1)).join(',')}]`);
  return `{"data":${build(0)}}`;
}

test('R-SCORE-2 other shapes (batch 2, 1 channel, 223 rows, 225 columns, 3 dimensions) are refused with 400 naming the path', async () => {
  const cases: [number[], RegExp][] = [
    [[2, 3, 224, 224], /^data has more than 1 entries; expected 1 \(shape \[1,3,224,224\]\)/],
    [[1, 1, 224, 224], /^data\[0\] has 1 entries; expected 3/],
    [[1, 3, 223, 224], /^data\[0\]\[0\] has 223 entries; expected 224/],
    [[1, 3, 224, 225], /^data\[0\]\[0\]\[0\] has more than 224 entries/],
    [[1, 3, 224], /^data\[0\]\[0\]\[0\] is a number; expected an array of 224 numbers/],
  ];
  for (const [shape, message] of cases) assertErrorShape(await post('/score', bodyOfShape(shape)), 400, message);
});

test('R-SCORE-2 non-numbers, NaN, Infinity, nesting and broken JSON get 400 with the place named', async () => {
  const cases: [string | Buffer, RegExp][] = [
    [honeycomb.replace(/\[\[\[\[\d+/, '[[[["7"'), /data\[0\]\[0\]\[0\]\[0\] is a string/],
    [honeycomb.replace(/\[\[\[\[\d+/, '[[[[NaN'), /is NaN, which JSON does not have/],
    [honeycomb.replace(/\[\[\[\[\d+/, '[[[[-Infinity'), /invalid JSON|Infinity/],
    [honeycomb.replace(/\[\[\[\[\d+/, '[[[[1e39'), /outside the range of a 32-bit float/],
    [honeycomb.replace(/\[\[\[\[\d+/, '[[[[[1]'), /is an array; expected a number/],
    [honeycomb.slice(0, 1000), /invalid JSON at byte 1000/],
    [`{"extra": ${'['.repeat(10_000)}`, /nests deeper than 64/],
    ['{"data": null}', /data is null/],
    ['[]', /must be a JSON object/],
    ['', /empty/],
    [Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22]), /invalid JSON/],
    [Buffer.from('\ufeff' + honeycomb), /JSON object|invalid JSON/],
  ];
  for (const [body, message] of cases) assertErrorShape(await post('/score', body), 400, message);
});

/** A chunked body (no Content-Length) that grows past the limit. */
function chunksPastTheLimit(): Readable {
  return Readable.from(
    (function* () {
      for (let sent = 0; sent <= MAX_BODY; sent += 65536) yield Buffer.alloc(65536, 0x20);
    })(),
  );
}

test('R-SCORE-2 a body over the limit is refused with 413, with the same message on POST /score and on v2 infer, whole or chunked', async () => {
  const message = `the body is larger than ${MAX_BODY} bytes (--max-body-bytes)`;
  for (const body of [() => Buffer.alloc(MAX_BODY + 1, 0x20), chunksPastTheLimit]) {
    const score = await post('/score', body());
    assertErrorShape(score, 413);
    assert.equal((score.json() as { error: { message: string } }).error.message, message, 'POST /score');
    const infer = await post('/v2/models/imagenet/infer', body());
    assert.equal(infer.status, 413, infer.text);
    assert.deepEqual(infer.json(), { error: message }, 'v2 infer');
  }
});

test('R-SCORE-1 a chunked body is read as its pieces arrive: pieces of any size score exactly like the whole body', async () => {
  const whole = await score(honeycomb);
  for (const size of [1, 7, 1000, 65537]) {
    // A few thousand one-byte writes are enough to cut numbers everywhere; the rest goes in one piece.
    const cut = size === 1 ? 3000 : honeycomb.length;
    const pieces = function* () {
      for (let at = 0; at < cut; at += size) yield Buffer.from(honeycomb.slice(at, Math.min(at + size, cut)));
      if (cut < honeycomb.length) yield Buffer.from(honeycomb.slice(cut));
    };
    const r = await post('/score', Readable.from(pieces()));
    assert.equal(r.status, 200, r.text);
    assert.deepEqual((r.json() as unknown as ScoreBody).result, whole.result, `${size}-byte pieces`);
  }
});

test('R-SCORE-2 a chunked body that grows past the limit is refused with 413, and the server keeps serving', async () => {
  assertErrorShape(await post('/score', chunksPastTheLimit()), 413, /larger than 4194304 bytes/);
  await score(honeycomb);
});

test('R-SCORE-1 any content type is read as JSON (curl -d sends form-urlencoded)', async () => {
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/json-patch+json; charset=utf-8']) {
    const r = await post('/score', honeycomb, { 'content-type': type });
    assert.equal(r.status, 200, type);
  }
});

test('R-SCORE-1 other methods get 405 and unknown paths 404, in the error shape', async () => {
  const get = await request(`${base}/score`);
  assertErrorShape({ status: get.statusCode, text: await get.body.text() }, 405);
  assert.equal(get.headers.allow, 'POST');
  for (const path of ['/scores', '/score/../../etc/passwd', '/%2e%2e/score', '/score%00']) {
    assertErrorShape(await post(path, honeycomb), 404);
  }
});

test('R-SCORE-2 1,000 fuzzed malformed bodies each get a 400 JSON error and the server keeps serving', async () => {
  const random = seededRandom(7);
  const valid = Buffer.from(honeycomb);
  const bodies = Array.from({ length: 1000 }, () => breakBody(valid, random));
  {
    let next = 0;
    const statuses: number[] = [];
    const worker = async () => {
      while (next < bodies.length) {
        const body = bodies[next++]!;
        const response = await client.request({ path: '/score', method: 'POST', body, headers: { 'content-type': 'application/json' } });
        const text = await response.body.text();
        statuses.push(response.statusCode);
        if (response.statusCode !== 400) assert.fail(`status ${response.statusCode} for a fuzzed body: ${text.slice(0, 200)}`);
        assert.equal(typeof (JSON.parse(text) as { error: { message: string } }).error.message, 'string');
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    assert.equal(statuses.length, 1000);
  }
  assert.equal(argmax((await score(honeycomb)).result), HONEYCOMB);
});

test('R-SCORE-1 open inference v2: health, metadata and infer on the same model', async () => {
  const ready = await request(`${base}/v2/health/ready`);
  assert.deepEqual(await ready.body.json(), { ready: true });
  const meta = await request(`${base}/v2/models/imagenet`);
  const metadata = (await meta.body.json()) as { inputs: { name: string; shape: number[] }[]; outputs: { shape: number[] }[] };
  assert.deepEqual(metadata.inputs[0]!.shape, [1, 3, 224, 224]);
  assert.deepEqual(metadata.outputs[0]!.shape, [1, 1000]);
  // The v2 protocol carries model tensors: the client normalises, as a Triton client would.
  const pixels = (JSON.parse(honeycomb) as { data: number[][][][] }).data.flat(3);
  const mean = [0.485, 0.456, 0.406];
  const std = [0.229, 0.224, 0.225];
  const plane = 224 * 224;
  const data = pixels.map((v, i) => (v / 255 - mean[Math.floor(i / plane)]!) / std[Math.floor(i / plane)]!);
  const r = await post(
    '/v2/models/imagenet/infer',
    JSON.stringify({ id: 'q1', inputs: [{ name: metadata.inputs[0]!.name, shape: [1, 3, 224, 224], datatype: 'FP32', data }] }),
  );
  assert.equal(r.status, 200, r.text);
  const answer = r.json() as { id: string; model_name: string; outputs: { shape: number[]; data: number[] }[] };
  assert.equal(answer.id, 'q1');
  assert.equal(answer.model_name, 'imagenet');
  assert.equal(answer.outputs[0]!.data.length, 1000);
  assert.equal(argmax(answer.outputs[0]!.data), HONEYCOMB);
});

test('R-SCORE-2 open inference v2 errors use that protocol\'s {"error": "<message>"} shape', async () => {
  for (const [path, body, status] of [
    ['/v2/models/imagenet/infer', '{"inputs": [{"name": "input", "shape": [1,3,2,2], "datatype": "FP32", "data": [1]}]}', 400],
    ['/v2/models/imagenet/infer', 'not json', 400],
    ['/v2/models/imagenet/infer', '{"inputs": "x"}', 400],
    ['/v2/models/other/infer', '{}', 404],
    ['/v2/models/../../x/infer', '{}', 404],
  ] as const) {
    const r = await post(path, body);
    assert.equal(r.status, status, r.text);
    assert.equal(typeof (r.json() as { error: unknown }).error, 'string', r.text);
  }
});

test('R-SCORE-3 concurrent requests of different pictures each get their own answer', async () => {
  const crossword = await pictureBody(crosswordSvg());
  const bodies = Array.from({ length: 8 }, (_, i) => (i % 2 ? crossword : honeycomb));
  const answers = await Promise.all(bodies.map((body) => score(body)));
  assert.deepEqual(
    answers.map((a) => argmax(a.result)),
    bodies.map((body) => (body === crossword ? CROSSWORD : HONEYCOMB)),
  );
});

test('R-SCORE-3 good and refused requests in flight together: each good one gets exactly the answer it gets alone (input arrays are reused)', async () => {
  const crossword = await pictureBody(crosswordSvg());
  const alone = { honeycomb: (await score(honeycomb)).result, crossword: (await score(crossword)).result };
  const random = seededRandom(11);
  const broken = Array.from({ length: 6 }, () => breakBody(Buffer.from(crossword), random));
  for (let round = 0; round < 3; round++) {
    const sent = Array.from({ length: 12 }, (_, i) =>
      i % 3 === 0
        ? { kind: 'broken' as const, body: broken[(i / 3 + round) % broken.length]! }
        : { kind: i % 3 === 1 ? ('honeycomb' as const) : ('crossword' as const), body: i % 3 === 1 ? honeycomb : crossword },
    );
    const answers = await Promise.all(sent.map(({ body }) => post('/score', body)));
    answers.forEach((answer, i) => {
      const { kind } = sent[i]!;
      if (kind === 'broken') assertErrorShape(answer, 400);
      else assert.deepEqual((answer.json() as unknown as ScoreBody).result, alone[kind], `request ${i} (${kind}) in round ${round}`);
    });
  }
});

test('metrics: images scored and the model run time per image, beside the request counts', async () => {
  const scoredBefore = (await readMetric(base, 'offcloud_scoring_images_scored_total')) ?? 0;
  const runsBefore = (await readMetric(base, 'offcloud_scoring_inference_seconds_count')) ?? 0;
  const timeBefore = (await readMetric(base, 'offcloud_scoring_inference_seconds_sum')) ?? 0;
  const answered = (await readMetric(base, 'offcloud_http_requests_total', { route: '/score', status: '200' })) ?? 0;
  for (let i = 0; i < 2; i++) assert.equal((await post('/score', honeycomb)).status, 200);
  assert.equal((await post('/score', '{"data": "no"}')).status, 400);
  assert.equal(await readMetric(base, 'offcloud_scoring_images_scored_total'), scoredBefore + 2);
  assert.equal(await readMetric(base, 'offcloud_scoring_inference_seconds_count'), runsBefore + 2);
  assert.ok((await readMetric(base, 'offcloud_scoring_inference_seconds_sum'))! > timeBefore);
  assert.equal(await readMetric(base, 'offcloud_http_requests_total', { route: '/score', status: '200' }), answered + 2);
  assert.ok(((await readMetric(base, 'offcloud_http_requests_total', { route: '/score', status: '400' })) ?? 0) >= 1);
});
