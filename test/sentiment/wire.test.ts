/** The container's HTTP surface with curl and undici: media types, /swagger, and bad input (reference §6 tests 20–23). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { request } from 'undici';
import { debianProgram } from '../helpers/index.ts';
import { sentimentOptions } from '../../src/sentiment/options.ts';
import { billingOptions } from '../../src/billing/options.ts';
import { SENTIMENT_V20, startSetup } from './helpers.ts';

const run = promisify(execFile);

async function post(base: string, body: string | Buffer, contentType = 'application/json', path = SENTIMENT_V20) {
  const response = await request(base + path, { method: 'POST', headers: { 'content-type': contentType }, body });
  const text = await response.body.text();
  return { status: response.statusCode, headers: response.headers, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

async function assertStillServing(base: string): Promise<void> {
  const ok = await post(base, JSON.stringify({ documents: [{ id: '1', language: 'en', text: 'Still here and happy.' }] }));
  assert.equal(ok.status, 200);
  assert.equal((ok.json().documents as unknown[]).length, 1);
}

test('R-SENT-2 curl with Content-Type application/json-patch+json and accept application/json gets documents and errors', async (t) => {
  const { base } = await startSetup(t);
  const curl = debianProgram('curl', '/usr/bin/curl');
  const body = JSON.stringify({
    documents: [
      { language: 'en', id: '1', text: 'I love this, it is excellent.' },
      { language: 'en', id: '2', text: 'Awful and boring.' },
    ],
  });
  const { stdout } = await run(curl, [
    '-sS',
    '-X',
    'POST',
    `${base}${SENTIMENT_V20}`,
    '-H',
    'Content-Type: application/json-patch+json',
    '-H',
    'accept: application/json',
    '-d',
    body,
  ]);
  const result = JSON.parse(stdout) as { documents: { id: string; score: number }[]; errors: unknown[] };
  assert.deepEqual(result.errors, []);
  assert.ok(result.documents[0]!.score > 0.5 && result.documents[1]!.score < 0.5);
  // v2.0 and v2.1 answer the same body.
  const v21 = await post(base, body, 'application/json', '/text/analytics/v2.1/sentiment');
  assert.deepEqual(v21.json(), result);
});

test('R-SENT-1 the container listens on port 5000 by default, its billing endpoint on 5100', () => {
  assert.equal(sentimentOptions.port.default, 5000);
  assert.equal(billingOptions.port.default, 5100);
});

test('R-SENT-7 GET /swagger is a browsable page and the OpenAPI document lists the sentiment endpoint', async (t) => {
  const { base } = await startSetup(t);
  const page = await request(`${base}/swagger`);
  assert.equal(page.statusCode, 200);
  assert.match(String(page.headers['content-type']), /text\/html/);
  const html = await page.body.text();
  assert.match(html, /POST \/text\/analytics\/v2\.0\/sentiment/);
  assert.match(html, /Try it out/);
  const document = (await (await request(`${base}/swagger/v1/swagger.json`)).body.json()) as { paths: Record<string, unknown> };
  for (const path of ['/text/analytics/v2.0/sentiment', '/text/analytics/v2.1/sentiment', '/status', '/ready', '/swagger'])
    assert.ok(path in document.paths, path);
  assert.equal((await request(`${base}/ready`)).statusCode, 200);
  assert.equal((await request(`${base}/health`)).statusCode, 200);
  const home = await request(`${base}/`);
  assert.equal(home.statusCode, 200);
  await home.body.dump();
});

test('R-SENT-3 showStats=true adds request and document statistics counted in text elements', async (t) => {
  const { base } = await startSetup(t);
  // 5,120 "é" written as e + combining accent: 10,240 UTF-16 units but 5,120 text elements, so it is accepted.
  const combining = 'e\u0301'.repeat(5120);
  const result = (
    await post(
      base,
      JSON.stringify({
        documents: [
          { id: 'a', text: combining },
          { id: 'b', text: 'Good.' },
        ],
      }),
      'application/json',
      `${SENTIMENT_V20}?showStats=true`,
    )
  ).json();
  assert.deepEqual(result.statistics, { documentsCount: 2, validDocumentsCount: 2, erroneousDocumentsCount: 0, transactionsCount: 7 });
  assert.deepEqual(
    (result.documents as { statistics: unknown }[]).map((d) => d.statistics),
    [
      { charactersCount: 5120, transactionsCount: 6 },
      { charactersCount: 5, transactionsCount: 1 },
    ],
  );
});

test('R-SENT-6 bad requests get 400 {code, message, innerError} and the container keeps serving', async (t) => {
  const { base } = await startSetup(t);
  const cases: [string, string | Buffer, string][] = [
    ['1,001 documents', JSON.stringify({ documents: Array.from({ length: 1001 }, (_, i) => ({ id: String(i), text: 'x' })) }), 'InvalidDocumentBatch'],
    [
      'invalid UTF-8',
      Buffer.concat([Buffer.from('{"documents":[{"id":"1","text":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}]}')]),
      'InvalidRequestBodyFormat',
    ],
    ['malformed JSON', '{"documents":[{"id":"1",', 'InvalidRequestBodyFormat'],
    ['missing documents', '{"docs":[]}', 'InvalidRequestBodyFormat'],
    ['documents not an array', '{"documents":"yes"}', 'InvalidRequestBodyFormat'],
    ['no documents', '{"documents":[]}', 'MissingInputRecords'],
    ['nested garbage as id', '{"documents":[{"id":{"a":[1,{"b":null}]},"text":"x"}]}', 'InvalidDocument'],
    ['text of the wrong type', '{"documents":[{"id":"1","text":["x",{"y":1}]}]}', 'InvalidDocument'],
    ['missing id', '{"documents":[{"text":"x"}]}', 'InvalidDocument'],
    ['document not an object', '{"documents":[42]}', 'InvalidDocument'],
    ['deeply nested arrays as documents', `{"documents":${'['.repeat(200_000)}${']'.repeat(200_000)}}`, 'InvalidDocument'],
    ['a deeply nested body', `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`, 'InvalidRequestBodyFormat'],
    ['a JSON string body', '"documents"', 'InvalidRequestBodyFormat'],
    ['body over 1 MB', JSON.stringify({ documents: [{ id: '1', text: 'a'.repeat(1024 * 1024) }] }), 'InvalidRequestBodyFormat'],
  ];
  for (const [what, body, innerCode] of cases) {
    const answer = await post(base, body);
    assert.equal(answer.status, 400, `${what}: ${answer.text.slice(0, 200)}`);
    const error = answer.json() as { code: string; message: string; innerError: { code: string; message: string } };
    assert.equal(error.code, 'BadRequest', what);
    assert.equal(typeof error.message, 'string', what);
    assert.equal(error.innerError.code, innerCode, what);
  }
  await assertStillServing(base);
});

test('R-SENT-6 a 10 MB body, a wrong media type and path tricks are refused in the v2 error shape', async (t) => {
  const { base } = await startSetup(t);
  const huge = await post(base, Buffer.alloc(10 * 1024 * 1024, 0x61));
  assert.equal(huge.status, 400);
  assert.match((huge.json().innerError as { message: string }).message, /too large/);
  const text = await post(base, '{"documents":[]}', 'text/plain');
  assert.equal(text.status, 415);
  assert.equal(text.json().code, 'UnsupportedMediaType');
  for (const path of [
    '/text/analytics/v2.0/sentiment/../../v9.0/sentiment',
    '/text/analytics/v2.0/sentiment%00',
    '/text/analytics/v2.0/Sentiment%2F..%2Fx',
    '/text/analytics/v9/sentiment',
  ]) {
    const answer = await post(base, '{"documents":[{"id":"1","text":"x"}]}', 'application/json', path);
    assert.equal(answer.status, 404, path);
    assert.equal(answer.json().code, 'NotFound', path);
  }
  await assertStillServing(base);
});
