/** The official v2 client, unmodified, against the container (reference §6 tests 20–22). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TextAnalyticsClient, type TextAnalyticsModels } from '@azure/cognitiveservices-textanalytics';
import { ApiKeyCredentials, RestError } from '@azure/ms-rest-js';
import { UNMEASURED_LEXICON_LANGUAGES } from '../../src/sentiment/lexicons.ts';
import { startSetup } from './helpers.ts';

function client(base: string): TextAnalyticsClient {
  return new TextAnalyticsClient(new ApiKeyCredentials({ inHeader: { 'Ocp-Apim-Subscription-Key': 'any-key' } }), base);
}

/** The client spreads the parsed body onto its response; its typings only say `body: any`. */
async function sentiment(base: string, options: TextAnalyticsModels.TextAnalyticsClientSentimentOptionalParams) {
  const response = await client(base).sentiment(options);
  return response as unknown as TextAnalyticsModels.SentimentBatchResult & { _response: { status: number } };
}

test('R-SENT-1 R-SENT-3 R-SENT-4 R-SENT-5 the v2 client scores every document, between 0 and 1, with no errors', async (t) => {
  const { base } = await startSetup(t);
  const result = await sentiment(base, {
    multiLanguageBatchInput: {
      documents: [
        { language: 'en', id: 'good', text: 'A wonderful, moving film with brilliant performances. I loved every minute.' },
        { language: 'en', id: 'bad', text: 'A dull, lifeless mess. The worst movie I have seen all year.' },
        { language: 'EN', id: 'upper', text: 'Great fun.' },
      ],
    },
  });
  assert.deepEqual(result.errors, []);
  assert.deepEqual(
    result.documents!.map((d) => d.id),
    ['good', 'bad', 'upper'],
  );
  for (const document of result.documents!) assert.ok(document.score! >= 0 && document.score! <= 1, `${document.id}: ${document.score}`);
  assert.ok(result.documents![0]!.score! > 0.5 && result.documents![1]!.score! < 0.5);
});

test('R-SENT-6 per-document problems come back in errors with HTTP 200, the rest are scored', async (t) => {
  const { base } = await startSetup(t);
  const result = await sentiment(base, {
    showStats: true,
    multiLanguageBatchInput: {
      documents: [
        { language: 'xx', id: 'lang', text: 'bonjour' },
        { language: 'en', id: 'empty', text: '' },
        { language: 'en', id: 'long', text: '😀'.repeat(5121) },
        { language: 'en', id: 'ok', text: 'Nice.' },
      ],
    },
  });
  assert.equal(result._response.status, 200);
  assert.deepEqual(
    result.documents!.map((d) => d.id),
    ['ok'],
  );
  const messages = Object.fromEntries(result.errors!.map((e) => [e.id, e.message]));
  assert.equal(messages.lang, 'Supplied language not supported. Pass in one of:en,es,pt,fr,de,it');
  assert.equal(messages.empty, 'Record cannot be null/empty');
  assert.match(messages.long!, /too large to be processed\. Limit document size to: 5120 text elements/);
  assert.deepEqual(result.statistics, { documentsCount: 4, validDocumentsCount: 1, erroneousDocumentsCount: 3, transactionsCount: 1 });
});

test('R-SENT-6 a request-level problem surfaces as RestError 400 with its code', async (t) => {
  const { base } = await startSetup(t);
  const documents = Array.from({ length: 1001 }, (_, i) => ({ language: 'en', id: String(i), text: 'fine' }));
  await assert.rejects(client(base).sentiment({ multiLanguageBatchInput: { documents } }), (err: unknown) => {
    assert.ok(err instanceof RestError);
    assert.equal(err.statusCode, 400);
    assert.equal(err.code, 'BadRequest');
    assert.match(err.message, /Invalid request/);
    return true;
  });
  const duplicate = [
    { id: '1', text: 'a' },
    { id: '1', text: 'b' },
  ];
  await assert.rejects(
    client(base).sentiment({ multiLanguageBatchInput: { documents: duplicate } }),
    (err: RestError) => err.statusCode === 400 && err.code === 'BadRequest',
  );
});

test('R-SENT-1 R-SENT-4 R-SENT-6 the measured lexicon languages are scored; the unmeasured ones get the unsupported-language error unless --unmeasured-languages', async (t) => {
  const clear: Record<string, [string, string]> = {
    es: ['Me encanta, es una película maravillosa.', 'Es una película horrible y aburrida.'],
    pt: ['Adorei, é um filme maravilhoso.', 'É um filme horrível e chato.'],
    fr: ["Un film magnifique, je l'adore.", 'Un film horrible et ennuyeux.'],
    it: ['Un film bellissimo e meraviglioso.', 'Un film orribile e noioso.'],
    de: ['Ein wunderbarer, großartiger Film.', 'Ein schrecklicher und langweiliger Film.'],
  };
  const documents = [
    ...Object.entries(clear).flatMap(([language, [good, bad]]) => [
      { language, id: `${language}+`, text: good },
      { language, id: `${language}-`, text: bad },
    ]),
    ...UNMEASURED_LEXICON_LANGUAGES.map((language) => ({ language, id: language, text: 'ok 😍' })),
  ];
  const scoresOf = (result: TextAnalyticsModels.SentimentBatchResult) => Object.fromEntries(result.documents!.map((d) => [d.id, d.score!]));

  const strict = await sentiment((await startSetup(t)).base, { multiLanguageBatchInput: { documents } });
  const scores = scoresOf(strict);
  for (const language of Object.keys(clear)) {
    assert.ok(scores[`${language}+`]! > 0.5, `${language}+ ${scores[`${language}+`]}`);
    assert.ok(scores[`${language}-`]! < 0.5, `${language}- ${scores[`${language}-`]}`);
  }
  assert.deepEqual(
    strict.errors,
    UNMEASURED_LEXICON_LANGUAGES.map((id) => ({ id, message: 'Supplied language not supported. Pass in one of:en,es,pt,fr,de,it' })),
  );

  const opted = await sentiment((await startSetup(t, { unmeasuredLanguages: true })).base, { multiLanguageBatchInput: { documents } });
  assert.deepEqual(opted.errors, []);
  const all = scoresOf(opted);
  for (const language of UNMEASURED_LEXICON_LANGUAGES) assert.ok(all[language]! >= 0 && all[language]! <= 1, language);
});
