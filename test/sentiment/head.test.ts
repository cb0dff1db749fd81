/** The encoder version's head and blend: seeded training that learns, and a blend fit that finds known weights. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cp, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { seededRandom } from '../../src/common/random.ts';
import { sigmoid } from '../../src/sentiment/features.ts';
import { fitBlend, headLogit, logitOf, trainHead } from '../../src/sentiment/head.ts';
import { ENCODER_PACKAGE, ENCODER_TARBALL_SHA256 } from '../../src/sentiment/encoder.ts';
import { StartupError } from '../../src/common/errors.ts';
import { HEAD_FILE, readFusedModel } from '../../src/sentiment/fused.ts';
import { tempDataDir } from '../helpers/index.ts';
import { ENCODER_MODEL_DIR, ENCODER_VERSION } from '../../src/sentiment/versions.ts';

/** Points in 8 dimensions labelled by the side of a plane through them, from a seeded generator. */
function plane(count: number, seed: number) {
  const random = seededRandom(seed);
  const inputs = 8;
  const x = Float32Array.from({ length: count * inputs }, () => random() * 2 - 1);
  const labels = Uint8Array.from({ length: count }, (_, n) => (x[n * inputs]! + 0.5 * x[n * inputs + 1]! - x[n * inputs + 2]! > 0 ? 1 : 0));
  return { x, labels, inputs };
}

test('the head trains deterministically for a seed and learns a separable problem it was not shown', () => {
  const train = plane(600, 1);
  const settings = { hidden: 16, epochs: 30, batch: 16, learningRate: 0.01, l2: 1e-5, seed: 7 };
  const first = trainHead(train.x, train.labels, train.inputs, settings);
  assert.deepEqual(trainHead(train.x, train.labels, train.inputs, settings), first);
  const unseen = plane(300, 2);
  let right = 0;
  for (let n = 0; n < 300; n++) right += headLogit(first, unseen.x, n * unseen.inputs) > 0 === (unseen.labels[n] === 1) ? 1 : 0;
  assert.ok(right / 300 > 0.9, `accuracy on unseen points ${right / 300}`);
});

test('the blend fit recovers the weights that made its labels', () => {
  const random = seededRandom(3);
  const truth = { head: 1.5, ngram: 0.5, bias: -0.25 };
  const count = 20_000;
  const heads = Float64Array.from({ length: count }, () => random() * 6 - 3);
  const ngrams = Float64Array.from({ length: count }, () => 0.02 + 0.96 * random());
  const labels = Uint8Array.from(heads, (h, i) => (random() < sigmoid(truth.head * h + truth.ngram * logitOf(ngrams[i]!) + truth.bias) ? 1 : 0));
  const fitted = fitBlend(heads, ngrams, labels);
  for (const key of ['head', 'ngram', 'bias'] as const) assert.ok(Math.abs(fitted[key] - truth[key]) < 0.12, `${key}: ${fitted[key]} vs ${truth[key]}`);
});

test('the shipped encoder version names the package, version, tarball sha256 and licence it reads, and beats the n-gram model held out', async () => {
  const { card } = await readFusedModel(ENCODER_MODEL_DIR);
  const installed = createRequire(import.meta.url)(`${ENCODER_PACKAGE}/package.json`) as { version: string; license: string };
  assert.equal(card.version, ENCODER_VERSION);
  assert.deepEqual(card.encoder, { package: ENCODER_PACKAGE, version: installed.version, tarballSha256: ENCODER_TARBALL_SHA256, licence: installed.license });
  assert.ok(card.validation.fused > card.validation.ngram, `held out: fused ${card.validation.fused} vs n-gram ${card.validation.ngram}`);
});

test('a head that is not the one its card was measured with is refused', async (t) => {
  const copy = join(await tempDataDir(t), 'sentiment-en-encoder');
  await cp(ENCODER_MODEL_DIR, copy, { recursive: true });
  const head = await readFile(join(copy, HEAD_FILE));
  head.writeFloatLE(head.readFloatLE(0) + 0.5, 0);
  await writeFile(join(copy, HEAD_FILE), head);
  await assert.rejects(readFusedModel(copy), (err: Error) => err instanceof StartupError && /not the head its card was measured with/.test(err.message));
});
