/** The model this project trains (models/sentiment-en): it loads, it reproduces its card, and training is deterministic. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadSentimentModel } from '../../src/sentiment/model.ts';
import { DEFAULT_MODEL_DIR } from '../../src/sentiment/server.ts';
import { accuracy, DEFAULT_SETTINGS, readSst2, splitBySentence, trainingDataPath, trainSentimentModel } from '../../src/sentiment/train.ts';
import { tempDataDir } from '../helpers/index.ts';
import { seededRandom } from '../../src/common/random.ts';

// The training data is not part of the repository (SST-2's publishers state no licence, so it
// is not redistributed here; the trained weights are). Where it is present ($SST2_TRAIN, or the
// default path beside the clone) the card's figures are reproduced from it; a clone without it,
// CI included, skips that one test and says why. Everything else here needs no dataset.
const DATA = trainingDataPath();
const withTrainingData = { skip: existsSync(DATA) ? false : `needs the SST-2 training data at ${DATA} (set $SST2_TRAIN)` };

test('R-SENT-4 the committed model loads and reproduces the validation accuracy its card records', withTrainingData, async () => {
  const model = await loadSentimentModel(DEFAULT_MODEL_DIR);
  const { examples, sha256 } = readSst2(DATA);
  assert.equal(sha256, model.card.training.dataSha256, 'the card was made from this train.tsv');
  const { validation } = splitBySentence(examples, model.card.training.validationShare, model.card.training.seed);
  assert.deepEqual(accuracy(validation, model.score), model.card.validation);
  assert.ok(model.card.validation.long > 0.8, `long-sentence accuracy ${model.card.validation.long}`);
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
