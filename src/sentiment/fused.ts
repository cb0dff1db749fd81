/**
 * The second English model version on disk (models/sentiment-en-encoder):
 * model.json (which encoder package it reads, the head's shape, the blend,
 * how it was trained, its held-out figures) and head.f32 (the head's weights,
 * little-endian float32: w1, b1, w2, b2). Scoring embeds the texts with the
 * encoder in batches, reads the head's logit, and blends it with the n-gram
 * model's score.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { StartupError } from '../common/errors.ts';
import { writeFileAtomic } from '../common/files.ts';
import { EMBEDDING_SIZE, SentenceEncoder } from './encoder.ts';
import { blended, headLogit, type Blend, type MlpHead } from './head.ts';
import { weightsDigest, type SentimentModel } from './model.ts';

export interface FusedModelCard {
  format: 'offcloud-sentiment-fused-v1';
  /** The model-version the APIs name it by. */
  version: string;
  language: 'en';
  encoder: { package: string; version: string; tarballSha256: string; licence: string };
  /** The n-gram model version it is fused with. */
  ngramVersion: string;
  head: { inputs: number; hidden: number };
  /** sha256 of head.f32: the card's figures were measured with these bytes. */
  headSha256: string;
  blend: Blend;
  training: {
    data: string;
    dataSha256: string;
    seed: number;
    headLines: number;
    blendLines: number;
    hidden: number;
    epochs: number;
    batch: number;
    learningRate: number;
    l2: number;
  };
  /** Accuracy on the held-out validation lines of 10+ tokens: the n-gram model alone, the head alone, fused. */
  validation: { lines: number; ngram: number; head: number; fused: number };
}

export const HEAD_FILE = 'head.f32';
export const FUSED_CARD_FILE = 'model.json';
/** How many texts go through the encoder at once. */
const ENCODER_BATCH = 32;

export interface FusedModel {
  card: FusedModelCard;
  /** Scores in [0, 1] of every text, embedded in batches. */
  scoreAll(texts: readonly string[]): Promise<Float64Array>;
}

function headFromBytes(raw: Buffer, shape: { inputs: number; hidden: number }): MlpHead {
  const { inputs, hidden } = shape;
  const floats = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
  return {
    inputs,
    hidden,
    w1: floats.subarray(0, hidden * inputs),
    b1: floats.subarray(hidden * inputs, hidden * inputs + hidden),
    w2: floats.subarray(hidden * inputs + hidden, hidden * inputs + 2 * hidden),
    b2: floats[hidden * inputs + 2 * hidden]!,
  };
}

export function headBytes(head: MlpHead): Uint8Array {
  const floats = new Float32Array(head.hidden * head.inputs + 2 * head.hidden + 1);
  floats.set(head.w1);
  floats.set(head.b1, head.hidden * head.inputs);
  floats.set(head.w2, head.hidden * head.inputs + head.hidden);
  floats[floats.length - 1] = head.b2;
  return new Uint8Array(floats.buffer);
}

export function fusedScorer(encoder: SentenceEncoder, head: MlpHead, blend: Blend, ngram: SentimentModel) {
  return async (texts: readonly string[]): Promise<Float64Array> => {
    const scores = new Float64Array(texts.length);
    for (let start = 0; start < texts.length; start += ENCODER_BATCH) {
      const batch = texts.slice(start, start + ENCODER_BATCH);
      const embeddings = await encoder.embed(batch);
      batch.forEach((text, i) => (scores[start + i] = blended(blend, headLogit(head, embeddings, i * EMBEDDING_SIZE), ngram.score(text))));
    }
    return scores;
  };
}

/** The card and head on disk, without the encoder; refused unless the head's bytes are the ones the card was measured with. */
export async function readFusedModel(dir: string): Promise<{ card: FusedModelCard; head: MlpHead }> {
  let card: FusedModelCard;
  let raw: Buffer;
  try {
    card = JSON.parse(await readFile(join(dir, FUSED_CARD_FILE), 'utf8')) as FusedModelCard;
    raw = await readFile(join(dir, HEAD_FILE));
  } catch (err) {
    throw new StartupError(`sentiment model in ${dir} cannot be read: ${(err as Error).message}; run npm run train:sentiment`);
  }
  const expected = 4 * (card.head.hidden * card.head.inputs + 2 * card.head.hidden + 1);
  if (card.format !== 'offcloud-sentiment-fused-v1' || card.head.inputs !== EMBEDDING_SIZE || raw.length !== expected) {
    throw new StartupError(`sentiment model in ${dir} is not a model this version reads (format ${card.format}, ${raw.length} bytes of head weights)`);
  }
  if (weightsDigest(raw) !== card.headSha256) throw new StartupError(`sentiment model in ${dir}: ${HEAD_FILE} is not the head its card was measured with`);
  return { card, head: headFromBytes(raw, card.head) };
}

export async function loadFusedModel(dir: string, ngram: SentimentModel): Promise<FusedModel> {
  const { card, head } = await readFusedModel(dir);
  const encoder = await SentenceEncoder.load();
  return { card, scoreAll: fusedScorer(encoder, head, card.blend, ngram) };
}

export async function writeFusedModel(dir: string, card: FusedModelCard, head: MlpHead): Promise<void> {
  await writeFileAtomic(join(dir, HEAD_FILE), headBytes(head));
  await writeFileAtomic(join(dir, FUSED_CARD_FILE), JSON.stringify(card, null, 2) + '\n');
}
