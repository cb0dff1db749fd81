/**
 * The two English model versions through the wire, with one container whose default is the
 * encoder version (so the encoder loads once for this file): v2 follows --model-version, v3.1
 * and the Language API follow model-version per request, and each answer names its version.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { loadSentimentModel } from '../../src/sentiment/model.ts';
import { startSentiment } from '../../src/sentiment/server.ts';
import { ENCODER_VERSION, NGRAM_MODEL_DIR, NGRAM_VERSION } from '../../src/sentiment/versions.ts';
import { confidenceScores } from '../../src/sentiment/classes.ts';
import { quiet } from '../helpers/index.ts';
import { SENTIMENT_V20, startSetup } from './helpers.ts';

const V31 = '/text/analytics/v3.1/sentiment';
const ANALYZE = '/language/:analyze-text?api-version=2023-04-01';

// Film-review sentences, the domain both versions were trained on (a hotel review's "spotless" room scores negative: see the card's limits).
const POSITIVE = ['A warm, funny and beautifully acted story that stays with you.', 'An absolute delight from start to finish.'];
const NEGATIVE = ['The plot is a muddled mess and the jokes fall flat.', 'The worst film I have ever seen.'];

interface V3Answer {
  modelVersion: string;
  documents: { id: string; sentiment: string; confidenceScores: { positive: number; negative: number; neutral: number } }[];
}

async function postJson<T>(url: string, body: unknown): Promise<T> {
  const response = await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await response.body.text();
  assert.equal(response.statusCode, 200, text);
  return JSON.parse(text) as T;
}

const documents = (texts: string[]) => texts.map((text, i) => ({ id: String(i), language: 'en', text }));

test('R-SENT-3 R-SENT-4 --model-version picks v2 and the default v3 version; model-version picks per request; each answer names its version', async (t) => {
  const { base } = await startSetup(t, { modelVersion: ENCODER_VERSION });
  const ngram = await loadSentimentModel(NGRAM_MODEL_DIR);
  const texts = [...POSITIVE, ...NEGATIVE];

  const v2 = await postJson<{ documents: { id: string; score: number }[] }>(base + SENTIMENT_V20, { documents: documents(texts) });
  const scores = v2.documents.map((d) => d.score);
  scores.forEach((score, i) => assert.equal(score >= 0.5, i < POSITIVE.length, `${texts[i]}: ${score}`));
  assert.ok(
    scores.some((score, i) => Math.abs(score - ngram.score(texts[i]!)) > 1e-3),
    'v2 scores come from the encoder version, not the n-gram model',
  );

  const asDefault = await postJson<V3Answer>(base + V31, { documents: documents(texts) });
  assert.equal(asDefault.modelVersion, ENCODER_VERSION);
  asDefault.documents.forEach((d, i) => assert.deepEqual(d.confidenceScores, confidenceScores(scores[i]!), 'v3.1 reads the same model as v2'));
  const latest = await postJson<V3Answer>(`${base}${V31}?model-version=latest`, { documents: documents(texts) });
  assert.deepEqual(latest, asDefault, '"latest" is the container default');

  const fast = await postJson<V3Answer>(`${base}${V31}?model-version=${NGRAM_VERSION}`, { documents: documents(texts) });
  assert.equal(fast.modelVersion, NGRAM_VERSION);
  fast.documents.forEach((d, i) => assert.deepEqual(d.confidenceScores, confidenceScores(ngram.score(texts[i]!)), 'the n-gram version on request'));

  const language = await postJson<{ results: V3Answer }>(base + ANALYZE, {
    kind: 'SentimentAnalysis',
    analysisInput: { documents: documents(texts) },
    parameters: { modelVersion: NGRAM_VERSION },
  });
  assert.equal(language.results.modelVersion, NGRAM_VERSION);
  assert.deepEqual(language.results.documents, fast.documents);
});

test('R-SENT-6 an unknown model version is refused naming the versions served, and --model-version takes only those', async (t) => {
  const { base } = await startSetup(t);
  const response = await request(`${base}${V31}?model-version=2026-11-26`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ documents: documents(['Fine.']) }),
  });
  const answer = (await response.body.json()) as { error: { innererror: { code: string; message: string } } };
  assert.equal(response.statusCode, 400);
  assert.equal(answer.error.innererror.code, 'ModelVersionIncorrect');
  assert.match(answer.error.innererror.message, new RegExp(`latest,${NGRAM_VERSION},${ENCODER_VERSION}`));
  await assert.rejects(
    startSentiment({ ...quiet, eula: 'accept', billing: 'http://127.0.0.1:1', apiKey: 'k', env: {}, modelVersion: '2026-11-26' }),
    /model-version/i,
  );
});
