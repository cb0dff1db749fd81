/** The model this project trains (models/sentiment-en): it loads, it reproduces its card, and training is deterministic. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { StartupError } from '../../src/common/errors.ts';
import { loadSentimentModel, modelFromWeights, WEIGHTS_FILE, type SentimentModelCard } from '../../src/sentiment/model.ts';
import { DEFAULT_MODEL_DIR } from '../../src/sentiment/server.ts';
import { DEFAULT_SETTINGS, dequantize, ngramCardDifferences, readSst2, trainSentimentModel } from '../../src/sentiment/train.ts';
import { tempDataDir } from '../helpers/index.ts';
import { seededRandom } from '../../src/common/random.ts';

// The training data is not part of the repository (SST-2's publishers state no licence, so it is
// not redistributed here; the trained weights are), so these tests use only what the repository
// ships: the card names the sha256 of the weights it was measured with, and the loader refuses
// any other. Re-measuring the card's figures from the data is `npm run train:sentiment -- --verify`,
// whose comparison is tested below on generated data.

test('R-SENT-4 the shipped model loads with the weights its card was measured with, and refuses changed ones', async (t) => {
  const model = await loadSentimentModel(DEFAULT_MODEL_DIR);
  assert.ok(model.card.validation.long > 0.8, `long-sentence accuracy ${model.card.validation.long}`);
  const copy = join(await tempDataDir(t), 'sentiment-en');
  await cp(DEFAULT_MODEL_DIR, copy, { recursive: true });
  const weights = await readFile(join(copy, WEIGHTS_FILE));
  weights.writeInt16LE(weights.readInt16LE(0) + 1, 0);
  await writeFile(join(copy, WEIGHTS_FILE), weights);
  await assert.rejects(loadSentimentModel(copy), (err: Error) => err instanceof StartupError && /not the weights its card was measured with/.test(err.message));
});

test('R-SENT-4 clear positive and negative sentences land on the right side of 0.5', async () => {
  const model = await loadSentimentModel(DEFAULT_MODEL_DIR);
  const positive = [
    'I loved this movie, it was wonderful.',
    'An absolute delight from start to finish.',
    "It's a brilliant, funny and touching film.",
    'The service was excellent and the staff were friendly.',
    'Great product, works perfectly, highly recommended!',
  ];
  const negative = [
    'This was a terrible, boring waste of time.',
    'The worst film I have ever seen.',
    "It isn't funny, it's just stupid and tedious.",
    'The food was cold and the waiter was rude.',
    'Awful quality, it broke after one day.',
  ];
  for (const text of positive) assert.ok(model.score(text) > 0.5, `${text}: ${model.score(text)}`);
  for (const text of negative) assert.ok(model.score(text) < 0.5, `${text}: ${model.score(text)}`);
});

/** 3000 labelled phrases in SST-2's layout, made from a seeded generator (no dataset needed). */
function syntheticSst2(seed: number): string {
  const random = seededRandom(seed);
  const pick = (words: string[]) => words[Math.floor(random() * words.length)]!;
  const good = ['wonderful', 'moving', 'sharp', 'funny', 'brilliant'];
  const bad = ['dull', 'tedious', 'clumsy', 'flat', 'awful'];
  const filler = ['the', 'film', 'is', 'quite', 'a', 'story', 'and', 'its', 'cast'];
  const lines = ['sentence\tlabel'];
  for (let i = 0; i < 3000; i++) {
    const label = random() < 0.5 ? 1 : 0;
    const words = Array.from({ length: 3 + Math.floor(random() * 8) }, () => pick(filler));
    words.splice(Math.floor(random() * words.length), 0, pick(label ? good : bad));
    lines.push(`${words.join(' ')}\t${label}`);
  }
  return lines.join('\n');
}

test('R-SENT-4 --verify reproduces every figure of a card from its data and names each one that differs', async (t) => {
  const dir = await tempDataDir(t);
  const [sample, other] = [join(dir, 'sample.tsv'), join(dir, 'other.tsv')];
  await writeFile(sample, syntheticSst2(7));
  await writeFile(other, syntheticSst2(8));
  const settings = { ...DEFAULT_SETTINGS, epochs: 1, features: { ...DEFAULT_SETTINGS.features, hashBits: 12 } };
  const { card, weights } = trainSentimentModel(sample, settings);
  const model = (c: SentimentModelCard) => modelFromWeights(c, dequantize(weights, c.weightScale));
  assert.deepEqual(ngramCardDifferences(model(card), readSst2(sample)), []);
  const claimed = { ...card, validation: { ...card.validation, long: card.validation.long + 0.01 } };
  assert.deepEqual(
    ngramCardDifferences(model(claimed), readSst2(sample)).map((line) => line.split(':')[0]),
    ['n-gram long'],
  );
  assert.match(ngramCardDifferences(model(card), readSst2(other))[0]!, /made from a train.tsv of sha256/);
});

test('R-SENT-4 training is deterministic: two runs on the same sample give identical weights', async (t) => {
  const dir = await tempDataDir(t);
  const sample = join(dir, 'sample.tsv');
  await writeFile(sample, syntheticSst2(20261126));
  const settings = { ...DEFAULT_SETTINGS, epochs: 2, features: { ...DEFAULT_SETTINGS.features, hashBits: 14 } };
  const first = trainSentimentModel(sample, settings);
  const second = trainSentimentModel(sample, settings);
  assert.deepEqual(first.card, second.card);
  assert.deepEqual(first.weights, second.weights);
  assert.ok(first.card.validation.allCount > 0);
});
