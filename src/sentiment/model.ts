/**
 * The trained English model on disk: model.json (feature config, bias, weight
 * scale, how it was trained, its validation accuracy) and weights.i16 (one
 * little-endian int16 per hash bucket).
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../common/files.ts';
import { StartupError } from '../common/errors.ts';
import { featureIndices, logit, sigmoid, type FeatureConfig } from './features.ts';

export interface SentimentModelCard {
  format: 'offcloud-sentiment-logistic-v1';
  language: string;
  features: FeatureConfig;
  bias: number;
  weightScale: number;
  /** sha256 of weights.i16: the card's figures were measured with these bytes. */
  weightsSha256: string;
  training: {
    data: string;
    dataSha256: string;
    seed: number;
    epochs: number;
    learningRate: number;
    l2: number;
    naiveBayesScaling: boolean;
    validationShare: number;
    trainCount: number;
  };
  validation: { all: number; allCount: number; long: number; longCount: number };
}

export const WEIGHTS_FILE = 'weights.i16';
export const CARD_FILE = 'model.json';

export interface SentimentModel {
  card: SentimentModelCard;
  weights: Float32Array;
  /** Score in [0, 1]: 0 most negative, 1 most positive. */
  score(text: string): number;
}

export function modelFromWeights(card: SentimentModelCard, weights: Float32Array): SentimentModel {
  return { card, weights, score: (text) => sigmoid(logit(featureIndices(text, card.features), weights, card.bias)) };
}

export async function loadSentimentModel(dir: string): Promise<SentimentModel> {
  let card: SentimentModelCard;
  let raw: Buffer;
  try {
    card = JSON.parse(await readFile(join(dir, CARD_FILE), 'utf8')) as SentimentModelCard;
    raw = await readFile(join(dir, WEIGHTS_FILE));
  } catch (err) {
    throw new StartupError(`sentiment model in ${dir} cannot be read: ${(err as Error).message}; run npm run train:sentiment`);
  }
  const expected = 2 << card.features.hashBits;
  if (card.format !== 'offcloud-sentiment-logistic-v1' || raw.length !== expected) {
    throw new StartupError(
      `sentiment model in ${dir} is not a model this version reads (format ${card.format}, ${raw.length} bytes of weights, expected ${expected})`,
    );
  }
  if (weightsDigest(raw) !== card.weightsSha256)
    throw new StartupError(`sentiment model in ${dir}: ${WEIGHTS_FILE} is not the weights its card was measured with`);
  const weights = new Float32Array(raw.length / 2);
  for (let i = 0; i < weights.length; i++) weights[i] = raw.readInt16LE(2 * i) * card.weightScale;
  return modelFromWeights(card, weights);
}

/** weights.i16's bytes: one little-endian int16 per bucket. */
export function weightsBytes(weights: Int16Array): Buffer {
  const raw = Buffer.alloc(weights.length * 2);
  weights.forEach((w, i) => raw.writeInt16LE(w, 2 * i));
  return raw;
}

/** The sha256 (hex) a card names its weights by, and a training file by. */
export function weightsDigest(raw: Uint8Array): string {
  return createHash('sha256').update(raw).digest('hex');
}

export async function writeModel(dir: string, card: SentimentModelCard, weights: Int16Array): Promise<void> {
  await writeFileAtomic(join(dir, WEIGHTS_FILE), weightsBytes(weights));
  await writeFileAtomic(join(dir, CARD_FILE), JSON.stringify(card, null, 2) + '\n');
}
