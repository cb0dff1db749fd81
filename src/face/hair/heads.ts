/**
 * The facial-hair and hair heads a user trains on their own machine
 * (`offcloud models train face-hair`, docs/face.md "facialHair and hair"):
 * L2-regularised logistic regressions over FaceRes's 1,024-value descriptor
 * and colour statistics of the regions around the face. This module is their
 * file format (read, checked, written) and their answer for one face; no
 * trained heads ship with offcloud.
 */
import { readFileSync } from 'node:fs';
import { FEATURE_LENGTH } from '../models/hair-features.ts';

export const HEADS_FORMAT = 'offcloud-face-hair-heads/1';
/** Where in a models folder the trainer leaves the heads by default, and where the container looks for them. */
export const HAIR_HEADS_PATH = 'face-hair/face-hair.json';

/** The heads every file has: facial hair, baldness, and the hat that hides the hair. */
export const REQUIRED_HEADS = ['moustache', 'beard', 'sideburns', 'bald', 'hat'] as const;
/** The hair colours of the reference's vocabulary; a file holds heads for those its data labelled. */
export const HAIR_COLOURS = ['black', 'blond', 'brown', 'gray', 'red', 'white', 'other'] as const;
export type HeadName = (typeof REQUIRED_HEADS)[number] | (typeof HAIR_COLOURS)[number];
export const HEAD_NAMES: readonly HeadName[] = [...REQUIRED_HEADS, ...HAIR_COLOURS];

export interface LogisticHead {
  bias: number;
  /** One per standardised feature. */
  weights: number[];
}

/** What the heads file says about itself: the model card's facts (rendered as Markdown beside it). */
export interface HeadsCard {
  /** Where the training images came from, as the user named it. */
  dataSource: string;
  /** The data's terms as the user accepted them. */
  dataTerms: string;
  faces: number;
  identities: number;
  /** Images in which no face was found (left out). */
  imagesWithoutFace: number;
  training: { seed: number; folds: number; inverseL2: number; personDisjoint: boolean };
  /** Out-of-fold AUC per head; null where the data had one class only. */
  crossValidatedAuc: Partial<Record<HeadName, number | null>>;
  /** Positives per head in the training data. */
  positives: Partial<Record<HeadName, number>>;
  check: CheckReport | null;
  knownGaps: string[];
}

/** False- and true-positive rates per group on a labelled check set, raw and as the API answers. */
export interface CheckReport {
  source: string;
  faces: number;
  imagesWithoutFace: number;
  rows: CheckRow[];
}

export interface CheckRow {
  head: HeadName;
  group: string;
  /** Faces labelled without / with the attribute. */
  negatives: number;
  positives: number;
  /** Share of negatives scored > 0.5 by the head alone, and as answered (facial hair × P(male)). */
  falsePositiveRate: number | null;
  answeredFalsePositiveRate: number | null;
  /** Share of positives answered > 0.5. */
  answeredTruePositiveRate: number | null;
}

export interface HeadsFile {
  format: typeof HEADS_FORMAT;
  /** Feature standardisation: (x − mean) / scale, per feature. */
  features: { mean: number[]; scale: number[] };
  heads: Partial<Record<HeadName, LogisticHead>>;
  card: HeadsCard;
}

/** Every head's probability for one face; colours only for those the file has. */
export type HeadScores = Partial<Record<HeadName, number>>;

export class HairHeadsError extends Error {}

const isNumbers = (value: unknown, length: number): value is number[] =>
  Array.isArray(value) && value.length === length && value.every((x) => typeof x === 'number' && Number.isFinite(x));

/** Checks a parsed heads file; throws HairHeadsError naming what is wrong. */
export function checkHeadsFile(value: unknown): HeadsFile {
  const file = value as Partial<HeadsFile> | null;
  if (typeof file !== 'object' || file === null || file.format !== HEADS_FORMAT) throw new HairHeadsError(`not a ${HEADS_FORMAT} file`);
  if (!isNumbers(file.features?.mean, FEATURE_LENGTH) || !isNumbers(file.features?.scale, FEATURE_LENGTH)) {
    throw new HairHeadsError(`its feature standardisation is not ${FEATURE_LENGTH} numbers`);
  }
  const heads = file.heads ?? {};
  for (const [name, head] of Object.entries(heads)) {
    if (!HEAD_NAMES.includes(name as HeadName)) throw new HairHeadsError(`unknown head ${JSON.stringify(name)}`);
    if (typeof head?.bias !== 'number' || !isNumbers(head.weights, FEATURE_LENGTH))
      throw new HairHeadsError(`head ${name} is not a bias and ${FEATURE_LENGTH} weights`);
  }
  const missing = REQUIRED_HEADS.filter((name) => !heads[name]);
  if (missing.length) throw new HairHeadsError(`it has no ${missing.join(', ')} head`);
  if (!HAIR_COLOURS.some((colour) => heads[colour])) throw new HairHeadsError('it has no hair-colour head');
  if (typeof file.card !== 'object' || file.card === null) throw new HairHeadsError('it has no model card');
  return file as HeadsFile;
}

/** Reads and checks a heads file. */
export function readHeadsFile(path: string): HeadsFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new HairHeadsError(`cannot read it: ${(err as Error).message}`);
  }
  try {
    return checkHeadsFile(JSON.parse(text));
  } catch (err) {
    if (err instanceof HairHeadsError) throw err;
    throw new HairHeadsError('it is not JSON');
  }
}

const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));

/** The heads with their standardisation folded in: one dot product per head and face. */
export class HairHeads {
  private readonly folded: [HeadName, Float64Array, number][];

  constructor(readonly file: HeadsFile) {
    const { mean, scale } = file.features;
    this.folded = (Object.entries(file.heads) as [HeadName, LogisticHead][]).map(([name, head]) => {
      const weights = Float64Array.from(head.weights, (w, i) => w / scale[i]!);
      let bias = head.bias;
      weights.forEach((w, i) => (bias -= w * mean[i]!));
      return [name, weights, bias];
    });
  }

  /** The colours this file can answer. */
  get colours(): (typeof HAIR_COLOURS)[number][] {
    return HAIR_COLOURS.filter((colour) => this.file.heads[colour]);
  }

  /** Each head's probability for one face's features (FEATURE_LENGTH values). */
  score(features: ArrayLike<number>): HeadScores {
    const scores: HeadScores = {};
    for (const [name, weights, bias] of this.folded) {
      let z = bias;
      for (let i = 0; i < weights.length; i++) z += weights[i]! * features[i]!;
      scores[name] = sigmoid(z);
    }
    return scores;
  }
}
