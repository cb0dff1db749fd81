/**
 * The SDKs a developer installs today, unmodified (endpoint + key),
 * against the container started with Eula/Billing/ApiKey: @azure/ai-text-analytics
 * (Text Analytics v3.1) and @azure/ai-language-text (the Language API).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AzureKeyCredential, TextAnalyticsClient, type AnalyzeSentimentResultArray } from '@azure/ai-text-analytics';
import { TextAnalysisClient, type SentimentAnalysisResult } from '@azure/ai-language-text';
import { confidenceScores } from '../../src/sentiment/classes.ts';
import { SENTIMENT_V20, startSetup, statusBecomes } from './helpers.ts';
import { request } from 'undici';
import { runHttpsClient } from '../cognitive/https.ts';

/** The SDKs refuse to send a key over plain HTTP (as to the vendor's containers) unless told this. */
const insecure = { allowInsecureConnection: true };
const key = new AzureKeyCredential('any-key');

function textAnalytics(base: string, options = {}) {
  return new TextAnalyticsClient(base, key, { ...insecure, ...options });
}
function language(base: string, options = {}) {
  return new TextAnalysisClient(base, key, { ...insecure, ...options });
}

const REVIEW = 'The restaurant had wonderful food and our waiter was friendly. The dessert was awful and the room was dirty.';

function sumsToOne(scores: { positive: number; neutral: number; negative: number }): boolean {
  return Math.abs(scores.positive + scores.neutral + scores.negative - 1) < 0.011;
}

test('without allowInsecureConnection the current SDKs refuse the plain-HTTP container before sending', async (t) => {
  const { base } = await startSetup(t);
  await assert.rejects(new TextAnalyticsClient(base, key).analyzeSentiment(['Nice.']), /allowInsecureConnection is false/);
  await assert.rejects(new TextAnalysisClient(base, key).analyze('SentimentAnalysis', ['Nice.']), /allowInsecureConnection is false/);
});

test('R-SENT-3 R-SENT-4 @azure/ai-text-analytics (v3.1) gets labels, class confidences and sentences', async (t) => {
  const { base } = await startSetup(t);
  const results: AnalyzeSentimentResultArray = await textAnalytics(base).analyzeSentiment(
    [
      { id: 'mixed', language: 'en', text: REVIEW },
      { id: 'good', language: 'en', text: 'A wonderful, moving film with brilliant performances. I loved every minute.' },
      { id: 'bad', language: 'en-US', text: 'A dull, lifeless mess. The worst movie I have seen all year.' },
    ],
    { includeStatistics: true },
  );
  assert.equal(results.modelVersion, '2026-11-22');
  assert.deepEqual(results.statistics, { documentCount: 3, validDocumentCount: 3, erroneousDocumentCount: 0, transactionCount: 3 });
  const byId = Object.fromEntries(results.map((r) => [r.id, r]));
  for (const result of results) {
    assert.ok(!result.error, result.id);
    if (result.error) continue;
    assert.ok(sumsToOne(result.confidenceScores), result.id);
    for (const sentence of result.sentences) {
      assert.ok(sumsToOne(sentence.confidenceScores));
      assert.equal(REVIEW.includes(sentence.text) || result.id !== 'mixed', true);
    }
  }
  const mixed = byId.mixed!;
  assert.ok(!mixed.error);
  if (mixed.error) return;
  assert.equal(mixed.sentiment, 'mixed');
  assert.deepEqual(
    mixed.sentences.map((s) => [s.sentiment, s.offset, s.length, s.text]),
    [
      ['positive', 0, 62, 'The restaurant had wonderful food and our waiter was friendly.'],
      ['negative', 63, 45, 'The dessert was awful and the room was dirty.'],
    ],
  );
  assert.deepEqual(mixed.statistics, { characterCount: REVIEW.length, transactionCount: 1 });
  assert.equal(byId.good!.error ? '' : byId.good!.sentiment, 'positive');
  assert.equal(byId.bad!.error ? '' : byId.bad!.sentiment, 'negative');
});

test('R-SENT-4 the v3 class confidences come from the same model as the v2 score', async (t) => {
  const { base } = await startSetup(t);
  const texts = [REVIEW, 'It is okay, I guess.', 'Brilliant.', 'Terrible service.'];
  const v2 = await request(base + SENTIMENT_V20, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ documents: texts.map((text, i) => ({ id: String(i), text })) }),
  });
  const scores = ((await v2.body.json()) as { documents: { score: number }[] }).documents.map((d) => d.score);
  const v3 = await textAnalytics(base).analyzeSentiment(texts);
  v3.forEach((result, i) => {
    assert.ok(!result.error);
    if (!result.error) assert.deepEqual(result.confidenceScores, confidenceScores(scores[i]!));
  });
});

test('R-SENT-6 per-document errors arrive as each SDK reports them, with their inner codes', async (t) => {
  const { base } = await startSetup(t);
  const documents = [
    { id: 'empty', language: 'en', text: '' },
    { id: 'lang', language: 'xx', text: 'Hello.' },
    { id: 'long', language: 'en', text: '😀'.repeat(5121) },
    { id: 'ok', language: 'en', text: 'Lovely.' },
  ];
  const v31 = await textAnalytics(base).analyzeSentiment(documents);
  const language_ = await language(base).analyze('SentimentAnalysis', documents);
  for (const results of [v31, language_] as { id: string; error?: { code: string; message: string } }[][]) {
    const codes = Object.fromEntries(results.map((r) => [r.id, r.error?.code ?? 'scored']));
    assert.deepEqual(codes, { empty: 'InvalidDocument', lang: 'UnsupportedLanguageCode', long: 'InvalidDocument', ok: 'scored' });
    assert.match(results.find((r) => r.id === 'long')!.error!.message, /Limit document size to: 5120 text elements/);
  }
  assert.match((language_[1] as { error: { message: string } }).error.message, /Supported languages: de,en,es,fr,it,pt\./);
});

test('R-SENT-6 too many documents is a RestError 400 from both SDKs', async (t) => {
  const { base } = await startSetup(t);
  const eleven = Array.from({ length: 11 }, (_, i) => `Review number ${i} was fine.`);
  // ai-text-analytics reports a request-level error's outer code, ai-language-text the inner one with both messages.
  await assert.rejects(textAnalytics(base).analyzeSentiment(eleven), { name: 'RestError', statusCode: 400, code: 'InvalidRequest' });
  await assert.rejects(language(base).analyze('SentimentAnalysis', eleven), {
    name: 'RestError',
    statusCode: 400,
    code: 'InvalidDocumentBatch',
    message: /Max 10 records/,
  });
  // The limit is an option of the container.
  const wider = await startSetup(t, { maxDocumentsV3: 20 });
  assert.equal((await language(wider.base).analyze('SentimentAnalysis', eleven)).length, 11);
});

test('@azure/ai-language-text with its default api-version and the one before gets the same answer', async (t) => {
  const { base } = await startSetup(t);
  const texts = [REVIEW, 'Great atmosphere. Close to plenty of restaurants, hotels, and transit!'];
  const current = await language(base).analyze('SentimentAnalysis', texts, 'en', { includeStatistics: true });
  const previous = await language(base, { serviceVersion: '2022-05-01' }).analyze('SentimentAnalysis', texts, 'en', { includeStatistics: true });
  assert.deepEqual(previous, current);
  const first = current[0] as SentimentAnalysisResult;
  assert.ok(!first.error);
  if (!first.error) {
    assert.equal(first.sentiment, 'mixed');
    assert.equal(first.sentences.length, 2);
  }
  assert.deepEqual(first.error ? null : first.statistics, { characterCount: REVIEW.length, transactionCount: 1 });
});

test('offsets and lengths count UTF-16 units by default, code points or text elements on request', async (t) => {
  const { base } = await startSetup(t);
  // 👩‍👩‍👧 is 5 code points, 8 UTF-16 units, one text element; é written as e + U+0301 is 2 of each, one text element.
  const text = 'Cafe\u0301 👩‍👩‍👧 night. We loved the terrible view.';
  const spans = async (stringIndexType?: 'Utf16CodeUnit' | 'UnicodeCodePoint' | 'TextElements_v8') => {
    const [result] = await language(base).analyze('SentimentAnalysis', [text], 'en', stringIndexType ? { stringIndexType } : {});
    assert.ok(result && !result.error);
    return result.error ? [] : result.sentences.map((s) => [s.offset, s.length]);
  };
  assert.deepEqual(await spans(), [
    [0, 21],
    [22, 27],
  ]);
  assert.deepEqual(await spans('Utf16CodeUnit'), await spans());
  assert.deepEqual(await spans('UnicodeCodePoint'), [
    [0, 18],
    [19, 27],
  ]);
  assert.deepEqual(await spans('TextElements_v8'), [
    [0, 13],
    [14, 27],
  ]);
  // v3.1 spells it TextElement_v8; v3.0 always counts text elements.
  const [v31] = await textAnalytics(base).analyzeSentiment([text], 'en', { stringIndexType: 'TextElement_v8' });
  assert.deepEqual(v31 && !v31.error ? v31.sentences.map((s) => s.offset) : [], [0, 14]);
  const v30 = await request(`${base}/text/analytics/v3.0/sentiment`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ documents: [{ id: '1', text }] }),
  });
  const answer = (await v30.body.json()) as { documents: { sentences: { offset: number; length: number }[] }[] };
  assert.deepEqual(
    answer.documents[0]!.sentences.map((s) => [s.offset, s.length]),
    [
      [0, 13],
      [14, 27],
    ],
  );
});

test('R-SENT-8 R-SENT-9 the billing ApiKey flow reaches the current SDKs in their error shape', async (t) => {
  const wrongKey = await startSetup(t, { apiKey: 'not-a-key-of-any-resource' });
  await assert.rejects(textAnalytics(wrongKey.base).analyzeSentiment(['Nice.']), { name: 'RestError', statusCode: 401, code: 'Invalid' });
  const setup = await startSetup(t, { meteringIntervalMs: 100 });
  const noRetries = { retryOptions: { maxRetries: 0 } };
  assert.equal((await language(setup.base, noRetries).analyze('SentimentAnalysis', ['Fine.'])).length, 1);
  await setup.billing.close();
  await statusBecomes(setup.base, (s) => s.apiStatus === 'CouldNotConnect');
  await assert.rejects(language(setup.base, noRetries).analyze('SentimentAnalysis', ['Fine.']), {
    name: 'RestError',
    statusCode: 503,
    code: 'CouldNotConnect',
  });
  await setup.restartBilling();
  await statusBecomes(setup.base, (s) => s.apiStatus === 'Valid');
  assert.equal((await language(setup.base, noRetries).analyze('SentimentAnalysis', ['Fine again.'])).length, 1);
});

test('with --tls the container serves HTTPS with the local CA, and the SDK needs no insecure option', async (t) => {
  const { container } = await startSetup(t, { tls: true });
  assert.ok(container.caCertPath);
  const endpoint = new URL(container.urls[0]!.url).origin.replace('127.0.0.1', 'localhost');
  assert.match(endpoint, /^https:\/\/localhost:\d+$/);
  assert.deepEqual(await runHttpsClient('language', endpoint, container.caCertPath), { sentiment: 'positive' });
});

test('opinion mining gives targets and their assessments, negation included, through both SDKs', async (t) => {
  const { base } = await startSetup(t);
  const text = 'The food was very good but the service was not helpful. It has a sleek premium aluminum design.';
  const [v31] = await textAnalytics(base).analyzeSentiment([{ id: 'r', language: 'en', text }], { includeOpinionMining: true });
  const [current] = await language(base).analyze('SentimentAnalysis', [text], 'en', { includeOpinionMining: true });
  for (const result of [v31, current]) {
    assert.ok(result && !result.error);
    if (!result || result.error) continue;
    const opinions = result.sentences.flatMap((s) =>
      s.opinions.map((o) => [o.target.text, o.target.sentiment, o.assessments.map((a) => [a.text, a.sentiment, a.isNegated])]),
    );
    assert.deepEqual(opinions, [
      ['food', 'positive', [['good', 'positive', false]]],
      ['service', 'negative', [['helpful', 'negative', true]]],
      ['design', 'positive', [['sleek', 'positive', false]]],
    ]);
    const [first] = result.sentences;
    const food = first!.opinions[0]!.target;
    assert.equal(text.slice(food.offset, food.offset + food.length), 'food');
  }
  // Without the option, no opinions; a language with no English model gets none either.
  const [plain] = await language(base).analyze('SentimentAnalysis', [text], 'en');
  assert.deepEqual(plain && !plain.error ? plain.sentences.flatMap((s) => s.opinions) : null, []);
  const [spanish] = await language(base).analyze('SentimentAnalysis', ['La comida es maravillosa.'], 'es', { includeOpinionMining: true });
  assert.deepEqual(spanish && !spanish.error ? spanish.sentences.flatMap((s) => s.opinions) : null, []);
});
