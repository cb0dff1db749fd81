/** The v3.x and Language routes with undici: bad parameters, bodies and paths get the v3 error shape, and the container keeps serving. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startSetup } from './helpers.ts';

const V31 = '/text/analytics/v3.1/sentiment';
const ANALYZE = '/language/:analyze-text?api-version=2023-04-01';

async function post(base: string, path: string, body: string | Buffer, contentType = 'application/json') {
  const response = await request(base + path, { method: 'POST', headers: { 'content-type': contentType }, body });
  const text = await response.body.text();
  return { status: response.statusCode, text, json: () => JSON.parse(text) as { error?: { code: string; message: string; innererror?: { code: string } } } };
}

const analyzeBody = (extra: object = {}, documents: unknown = [{ id: '1', text: 'Lovely.' }]) =>
  JSON.stringify({ kind: 'SentimentAnalysis', analysisInput: { documents }, ...extra });

test('R-SENT-6 bad v3.1 and Language requests get 400 {error:{code, message, innererror}} and serving goes on', async (t) => {
  const { base } = await startSetup(t);
  const good = JSON.stringify({ documents: [{ id: '1', text: 'Lovely.' }] });
  const cases: [string, string, string | Buffer, string][] = [
    ['unknown index type', `${V31}?stringIndexType=Bytes`, good, 'InvalidParameterValue'],
    ['unknown model version', `${V31}?model-version=1999-01-01`, good, 'ModelVersionIncorrect'],
    ['showStats not a boolean', `${V31}?showStats=maybe`, good, 'InvalidParameterValue'],
    ['opinionMining repeated', `${V31}?opinionMining=true&opinionMining=false`, good, 'InvalidParameterValue'],
    ['malformed JSON', V31, '{"documents":[', 'InvalidRequestBodyFormat'],
    ['invalid UTF-8', V31, Buffer.from([0x7b, 0xff, 0x7d]), 'InvalidRequestBodyFormat'],
    ['empty batch (v3)', V31, '{"documents":[]}', 'MissingInputRecords'],
    ['duplicate ids', V31, '{"documents":[{"id":"1","text":"a"},{"id":"1","text":"b"}]}', 'InvalidDocument'],
    ['text of the wrong type', V31, '{"documents":[{"id":"1","text":{"a":1}}]}', 'InvalidDocument'],
    ['body over 1 MB', V31, JSON.stringify({ documents: [{ id: '1', text: 'a'.repeat(1024 * 1024) }] }), 'InvalidRequestBodyFormat'],
    ['no api-version', '/language/:analyze-text', analyzeBody(), 'MissingApiVersionParameter'],
    ['unknown api-version', '/language/:analyze-text?api-version=2099-01-01', analyzeBody(), 'UnsupportedApiVersion'],
    ['another task kind', ANALYZE, JSON.stringify({ kind: 'EntityRecognition', analysisInput: { documents: [] } }), 'InvalidParameterValue'],
    ['no kind', ANALYZE, '{"analysisInput":{"documents":[]}}', 'InvalidParameterValue'],
    ['parameters not an object', ANALYZE, analyzeBody({ parameters: [1, 2] }), 'InvalidRequestBodyFormat'],
    ['unknown stringIndexType', ANALYZE, analyzeBody({ parameters: { stringIndexType: 'Utf8' } }), 'InvalidParameterValue'],
    ['loggingOptOut of the wrong type', ANALYZE, analyzeBody({ parameters: { loggingOptOut: 'yes' } }), 'InvalidParameterValue'],
    ['empty batch (Language)', ANALYZE, analyzeBody({}, []), 'MissingInputDocuments'],
    ['documents not an array', ANALYZE, analyzeBody({}, 'all of them'), 'InvalidRequestBodyFormat'],
    ['a JSON array body', ANALYZE, '[1,2,3]', 'InvalidRequestBodyFormat'],
    ['a deeply nested body without a kind', ANALYZE, `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`, 'InvalidParameterValue'],
  ];
  for (const [what, path, body, innerCode] of cases) {
    const answer = await post(base, path, body);
    assert.equal(answer.status, 400, `${what}: ${answer.text.slice(0, 200)}`);
    const { error } = answer.json();
    assert.equal(typeof error?.message, 'string', what);
    assert.equal(error?.innererror?.code ?? error?.code, innerCode, `${what}: ${answer.text.slice(0, 300)}`);
  }
  const media = await post(base, V31, good, 'text/plain');
  assert.equal(media.status, 415);
  assert.equal(media.json().error?.code, 'InvalidRequest');
  for (const path of [
    '/language/analyze-text?api-version=2023-04-01',
    '/language/:analyze-text/../x',
    '/text/analytics/v3.2/sentiment',
    '/language/:analyze-conversations',
  ]) {
    const answer = await post(base, path, analyzeBody());
    assert.equal(answer.status, 404, path);
    assert.equal(answer.json().error?.code, 'NotFound', path);
  }
  const ok = await post(base, ANALYZE, analyzeBody({ parameters: { modelVersion: 'latest', loggingOptOut: true, stringIndexType: 'UnicodeCodePoint' } }));
  assert.equal(ok.status, 200, ok.text);
  assert.equal((JSON.parse(ok.text) as { kind: string }).kind, 'SentimentAnalysisResults');
});

test('a very long word gets the LongWordsInDocument warning; showStats=true adds statistics', async (t) => {
  const { base } = await startSetup(t);
  const answer = await post(
    base,
    `${V31}?showStats=true`,
    JSON.stringify({
      documents: [
        { id: 'long', text: `Great ${'x'.repeat(70)} stuff.` },
        { id: 'plain', text: 'Great stuff.' },
      ],
    }),
  );
  const body = JSON.parse(answer.text) as { statistics: object; documents: { id: string; warnings: { code: string }[]; statistics: object }[] };
  assert.deepEqual(body.statistics, { documentsCount: 2, validDocumentsCount: 2, erroneousDocumentsCount: 0, transactionsCount: 2 });
  assert.deepEqual(
    body.documents.map((d) => [d.id, d.warnings.map((w) => w.code)]),
    [
      ['long', ['LongWordsInDocument']],
      ['plain', []],
    ],
  );
  assert.deepEqual(body.documents[1]!.statistics, { charactersCount: 12, transactionsCount: 1 });
});
