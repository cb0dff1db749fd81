/**
 * Trains the facial-hair and hair heads on the user's own labelled images
 * (`offcloud models train face-hair`): the face container's own models find
 * each image's largest face and read its features (FaceRes's descriptor and
 * the region colours), L2-regularised logistic heads are fitted to the
 * labels, person-disjoint k-fold cross-validation says how well each head
 * ranks faces it never saw, and an optional labelled check set says how
 * often each head is wrong per group of people. The heads and their model
 * card go to the user's disk only.
 *
 * Deterministic: the seed drives the folds, the fit starts from zero, and
 * nothing depends on the clock or the order files are listed in.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Print } from '../../common/command-line.ts';
import { writeFileAtomic } from '../../common/files.ts';
import { UsageError } from '../../common/errors.ts';
import { seededRandom, shuffle } from '../../common/random.ts';
import { faceAttributes, HAIR_MIN_WIDTH } from '../attributes.ts';
import { decodeImage } from '../decode.ts';
import { FEATURE_LENGTH } from '../models/hair-features.ts';
import type { RgbImage } from '../models/image.ts';
import { FaceModels, type ModelPaths } from '../models/index.ts';
import { areaUnderCurve, fitLogistic, predict, type Design } from './logistic.ts';
import { missingRequiredHeads, readAttributeFile, readPairsFile, type LabelledImage } from './labels.ts';
import {
  HAIR_COLOURS,
  HairHeads,
  HEADS_FORMAT,
  type CheckReport,
  type CheckRow,
  type HeadName,
  type HeadsCard,
  type HeadsFile,
  type HeadScores,
  type LogisticHead,
} from './heads.ts';

export interface TrainSettings {
  seed: number;
  folds: number;
  /** scikit-learn's C: the penalty is ‖w‖² / (2C). */
  inverseL2: number;
  /** Use at most this many of the labelled images found on disk (0: all). */
  limit: number;
}

export const DEFAULT_TRAIN_SETTINGS: TrainSettings = { seed: 1, folds: 5, inverseL2: 0.2, limit: 0 };

/** A labelled folder of images. */
export interface LabelledFolder {
  folder: string;
  /** The CelebA-style attribute file. */
  attributes: string;
  /** `<image> <key>` pairs: the person in each image (training) or its group (check set); null: none. */
  pairs: string | null;
}

export interface TrainJob {
  data: LabelledFolder;
  /** What the card says of the data: where it came from and its terms as the user accepted them. */
  dataSource: string;
  dataTerms: string;
  check: LabelledFolder | null;
  /** The heads file; the card goes beside it as <name>.card.md. */
  out: string;
  settings: TrainSettings;
  modelPaths: ModelPaths;
  print: Print;
}

/**
 * CelebA's aligned crops fill the picture with the face, so little is left
 * around it for the detector: a grey border this wide lets it find most of
 * them, and costs nothing on other photos.
 */
const BORDER = 60;
const GREY = 128;

function withBorder(image: RgbImage): RgbImage {
  const width = image.width + 2 * BORDER;
  const height = image.height + 2 * BORDER;
  const data = new Uint8Array(width * height * 3).fill(GREY);
  for (let y = 0; y < image.height; y++) data.set(image.data.subarray(y * image.width * 3, (y + 1) * image.width * 3), ((y + BORDER) * width + BORDER) * 3);
  return { data, width, height };
}

/** The faces read from a labelled folder: one per image where a face was found. */
interface Extracted {
  images: LabelledImage[];
  /** P(male) and width of each face. */
  male: number[];
  width: number[];
  /** FEATURE_LENGTH raw features per face, row after row. */
  features: Float32Array;
  withoutFace: number;
}

/** An image's file: in the folder, or in CelebA's img_align_celeba/ inside it. */
function imagePath(folder: string, image: string): string | null {
  return [join(folder, image), join(folder, 'img_align_celeba', image)].find((path) => existsSync(path)) ?? null;
}

async function extract(models: FaceModels, folder: string, images: LabelledImage[], what: string, print: Print): Promise<Extracted> {
  const out: Extracted = { images: [], male: [], width: [], features: new Float32Array(images.length * FEATURE_LENGTH), withoutFace: 0 };
  const every = Math.max(1, Math.floor(images.length / 20));
  const started = performance.now();
  for (const [n, labelled] of images.entries()) {
    const image = withBorder(await decodeImage(await readFile(imagePath(folder, labelled.image)!)));
    const [box] = await models.detect(image, 1);
    if (box) {
      const [face] = await models.hairFeatures(image, [box]);
      out.features.set(face!.features, out.images.length * FEATURE_LENGTH);
      out.images.push(labelled);
      out.male.push(face!.male);
      out.width.push(box.width);
    } else {
      out.withoutFace++;
    }
    if ((n + 1) % every === 0 || n + 1 === images.length) {
      const rate = (n + 1) / ((performance.now() - started) / 1000);
      print(
        `${what}: ${n + 1}/${images.length} images (${Math.round(((n + 1) / images.length) * 100)} %), ${out.withoutFace} without a face, ${rate.toFixed(1)} images/s`,
      );
    }
  }
  out.features = out.features.slice(0, out.images.length * FEATURE_LENGTH);
  return out;
}

/** The labelled images of a folder that are on disk, in the attribute file's order, at most `limit` (0: all). */
function onDisk(data: LabelledFolder, limit: number): { images: LabelledImage[]; heads: HeadName[]; absent: number } {
  const { images, heads } = readAttributeFile(data.attributes);
  const present = images.filter((image) => imagePath(data.folder, image.image) !== null);
  return { images: limit > 0 ? present.slice(0, limit) : present, heads, absent: images.length - present.length };
}

/** Numbers as the file stores them: six significant digits, the same text on every machine. */
const stored = (x: number) => Number(x.toPrecision(6));

/** Mean and scale (standard deviation, 1 where it is 0) of every feature. */
function standardisation(features: Float32Array, n: number): { mean: number[]; scale: number[] } {
  const mean = new Float64Array(FEATURE_LENGTH);
  const squares = new Float64Array(FEATURE_LENGTH);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < FEATURE_LENGTH; j++) {
      const v = features[i * FEATURE_LENGTH + j]!;
      mean[j]! += v;
      squares[j]! += v * v;
    }
  }
  const scale = Array.from(mean, (sum, j) => {
    const m = sum / n;
    const sd = Math.sqrt(Math.max(0, squares[j]! / n - m * m));
    return stored(sd > 1e-9 ? sd : 1);
  });
  return { mean: Array.from(mean, (sum) => stored(sum / n)), scale };
}

function standardised(features: Float32Array, n: number, { mean, scale }: { mean: number[]; scale: number[] }): Design {
  const x = new Float32Array(n * FEATURE_LENGTH);
  for (let i = 0; i < n; i++) for (let j = 0; j < FEATURE_LENGTH; j++) x[i * FEATURE_LENGTH + j] = (features[i * FEATURE_LENGTH + j]! - mean[j]!) / scale[j]!;
  return { x, d: FEATURE_LENGTH };
}

/**
 * Each face's fold: the people (or, without identities, the images) shuffled
 * by the seed and dealt round, so no person is in two folds.
 */
export function foldsOf(keys: readonly string[], folds: number, seed: number): Int32Array {
  const people = shuffle([...new Set(keys)].sort(), seededRandom(seed));
  const foldOf = new Map(people.map((person, i) => [person, i % folds]));
  return Int32Array.from(keys, (key) => foldOf.get(key)!);
}

const rowsWhere = (n: number, keep: (row: number) => boolean) => Int32Array.from({ length: n }, (_, i) => i).filter(keep);

/** Out-of-fold AUC of one head: each fold scored by heads fitted on the others. */
function crossValidatedAuc(design: Design, labels: Int8Array, fold: Int32Array, folds: number, inverseL2: number): number | null {
  const scores: number[] = [];
  const truth: number[] = [];
  for (let f = 0; f < folds; f++) {
    const train = rowsWhere(labels.length, (i) => labels[i] !== 0 && fold[i] !== f);
    const held = rowsWhere(labels.length, (i) => labels[i] !== 0 && fold[i] === f);
    const classes = new Set(Array.from(train, (i) => labels[i]));
    if (held.length === 0 || classes.size < 2) continue;
    const fitted = fitLogistic(design, train, labels, inverseL2);
    for (const i of held) {
      scores.push(predict(fitted, design, i));
      truth.push(labels[i]!);
    }
  }
  const auc = areaUnderCurve(scores, truth);
  return auc === null ? null : stored(auc);
}

/** What the API answers for each head of one face, from the heads' scores (the 60-px rule and the P(male) gate included). */
function answeredScores(scores: HeadScores, male: number, width: number): Partial<Record<HeadName, number>> {
  const rectangle = { left: 0, top: 0, width, height: width };
  const answer = faceAttributes({ rectangle, male, hair: scores }, ['facialHair', 'hair']) as {
    facialHair: Record<'moustache' | 'beard' | 'sideburns', number>;
    hair: { bald: number; invisible: boolean; hairColor: { color: string; confidence: number }[] };
  };
  const colours = Object.fromEntries(answer.hair.hairColor.map(({ color, confidence }) => [color, confidence]));
  return {
    ...answer.facialHair,
    bald: answer.hair.bald,
    hat: answer.hair.invisible ? 1 : 0,
    ...Object.fromEntries(HAIR_COLOURS.filter((c) => scores[c] !== undefined).map((c) => [c, colours[c] ?? 0])),
  };
}

/** False- and true-positive rates per head and group on the check set, raw and as answered. */
function checkReport(heads: HairHeads, check: Extracted, groups: Map<string, string>, source: string): CheckReport {
  const faces = check.images.map((labelled, n) => {
    const scores = heads.score(check.features.subarray(n * FEATURE_LENGTH, (n + 1) * FEATURE_LENGTH));
    return { labelled, group: groups.get(labelled.image) ?? 'unlabelled', scores, answered: answeredScores(scores, check.male[n]!, check.width[n]!) };
  });
  const rate = (count: number, of: number) => (of === 0 ? null : stored(count / of));
  const rows: CheckRow[] = [];
  const groupNames = ['all', ...[...new Set(faces.map((f) => f.group))].sort()];
  for (const head of Object.keys(heads.file.heads) as HeadName[]) {
    for (const group of groupNames) {
      const inGroup = faces.filter((f) => group === 'all' || f.group === group);
      const negatives = inGroup.filter((f) => f.labelled.labels[head] === -1);
      const positives = inGroup.filter((f) => f.labelled.labels[head] === 1);
      if (negatives.length + positives.length === 0) continue;
      rows.push({
        head,
        group,
        negatives: negatives.length,
        positives: positives.length,
        falsePositiveRate: rate(negatives.filter((f) => f.scores[head]! > 0.5).length, negatives.length),
        answeredFalsePositiveRate: rate(negatives.filter((f) => f.answered[head]! > 0.5).length, negatives.length),
        answeredTruePositiveRate: rate(positives.filter((f) => f.answered[head]! > 0.5).length, positives.length),
      });
    }
  }
  return { source, faces: faces.length, imagesWithoutFace: check.withoutFace, rows };
}

function knownGaps(card: Omit<HeadsCard, 'knownGaps'>, trained: HeadName[]): string[] {
  const never = HAIR_COLOURS.filter((c) => !trained.includes(c));
  return [
    ...(never.length ? [`Never answers the hair colours ${never.join(', ')}: the training data labelled none of them.`] : []),
    `Faces narrower than ${HAIR_MIN_WIDTH} px get zero confidences and hair.invisible = true: the heads are much worse on small faces.`,
    'facialHair scores are multiplied by FaceRes P(male): a bearded face FaceRes takes for a woman gets a low score.',
    'hair.invisible is the hat head over 0.5; other things that hide hair (hoods, scarves) are only seen if the data labelled them as hats.',
    'The heads learn the labels and the people of the training data: groups it holds few of are answered worse.',
    ...(card.training.personDisjoint ? [] : ['No identity file: the folds split images, not people, so the cross-validated AUCs are optimistic.']),
    ...(card.check ? [] : ['No check set: false-positive rates per group were not measured (give --check).']),
  ];
}

const percent = (x: number | null) => (x === null ? '–' : `${(x * 100).toFixed(1)} %`);

/** The model card, as Markdown. */
export function renderCard(file: HeadsFile): string {
  const { card } = file;
  const lines = [
    '# Model card: offcloud face-hair heads',
    '',
    'L2-regularised logistic heads for the Face API attributes `facialHair` and `hair`, over FaceRes’s 1,024-value descriptor and colour statistics of the regions around the face, trained on this machine by `offcloud models train face-hair`. Not part of offcloud: the weights follow the training data’s terms below.',
    '',
    '## Data',
    '',
    `- Source: ${card.dataSource}`,
    `- Terms, as accepted by the user: ${card.dataTerms}`,
    `- Faces: ${card.faces} of ${card.identities} ${card.training.personDisjoint ? 'people' : 'images (no identity file)'}; ${card.imagesWithoutFace} images without a face found were left out.`,
    '',
    '## Training',
    '',
    `- Seed ${card.training.seed}, ${card.training.folds}-fold ${card.training.personDisjoint ? 'person-disjoint ' : ''}cross-validation, C = ${card.training.inverseL2} (penalty ‖w‖²/(2C)).`,
    '',
    '| head | positives | cross-validated AUC |',
    '|---|---|---|',
    ...(Object.keys(file.heads) as HeadName[]).map((head) => `| ${head} | ${card.positives[head] ?? 0} | ${card.crossValidatedAuc[head]?.toFixed(3) ?? '–'} |`),
    '',
    '## Bias: rates per group on the check set',
    '',
  ];
  if (card.check) {
    lines.push(
      `Check set: ${card.check.source}, ${card.check.faces} faces (${card.check.imagesWithoutFace} images without a face left out). "Raw": the head alone over 0.5; "answered": what the API says (facial hair × P(male), the ${HAIR_MIN_WIDTH}-px rule, invisible hides colours).`,
      '',
      '| head | group | negatives | positives | false positives, raw | false positives, answered | true positives, answered |',
      '|---|---|---|---|---|---|---|',
      ...card.check.rows.map(
        (r) =>
          `| ${r.head} | ${r.group} | ${r.negatives} | ${r.positives} | ${percent(r.falsePositiveRate)} | ${percent(r.answeredFalsePositiveRate)} | ${percent(r.answeredTruePositiveRate)} |`,
      ),
    );
  } else {
    lines.push('Not measured: no check set was given.');
  }
  lines.push('', '## Known gaps', '', ...card.knownGaps.map((gap) => `- ${gap}`), '');
  return lines.join('\n');
}

/** The path of the card beside a heads file. */
export const cardPathOf = (out: string) => out.replace(/(\.json)?$/, '.card.md');

/** Trains the heads and writes them with their card; returns the file. */
export async function trainHairHeads(job: TrainJob): Promise<HeadsFile> {
  const { settings, print } = job;
  const data = onDisk(job.data, settings.limit);
  const missing = missingRequiredHeads(data.heads);
  if (missing.length) throw new UsageError(`${job.data.attributes} has no column ${missing.join(', ')}: the heads need them all`);
  if (data.images.length === 0) throw new UsageError(`none of the images of ${job.data.attributes} is in ${job.data.folder}`);
  print(`${data.images.length} labelled images on disk (${data.absent} listed but absent); loading the face models`);
  const models = await FaceModels.load(job.modelPaths);
  const train = await extract(models, job.data.folder, data.images, 'features', print);
  const check = job.check ? await extractCheck(models, job.check, print) : null;
  const n = train.images.length;
  if (n < settings.folds) throw new UsageError(`only ${n} faces were found: too few for ${settings.folds} folds`);

  const identities = job.data.pairs ? readPairsFile(job.data.pairs) : null;
  const keys = train.images.map(({ image }) => identities?.get(image) ?? `image:${image}`);
  const fold = foldsOf(keys, settings.folds, settings.seed);
  const features = standardisation(train.features, n);
  const design = standardised(train.features, n, features);

  const heads: HeadsFile['heads'] = {};
  const aucs: HeadsCard['crossValidatedAuc'] = {};
  const positives: HeadsCard['positives'] = {};
  for (const head of data.heads) {
    const labels = Int8Array.from(train.images, (image) => image.labels[head] ?? 0);
    const labelled = rowsWhere(n, (i) => labels[i] !== 0);
    positives[head] = labelled.filter((i) => labels[i] === 1).length;
    if (positives[head] === 0 || positives[head] === labelled.length) {
      print(`${head}: every labelled face is ${positives[head] ? 'positive' : 'negative'}; no head`);
      continue;
    }
    aucs[head] = crossValidatedAuc(design, labels, fold, settings.folds, settings.inverseL2);
    const fitted = fitLogistic(design, labelled, labels, settings.inverseL2);
    heads[head] = { bias: stored(fitted.bias), weights: Array.from(fitted.weights, stored) } satisfies LogisticHead;
    print(`${head}: ${positives[head]} positives of ${labelled.length}, cross-validated AUC ${aucs[head]?.toFixed(3) ?? '–'}`);
  }
  const stillMissing = missingRequiredHeads(Object.keys(heads) as HeadName[]);
  if (stillMissing.length) throw new UsageError(`no head could be fitted for ${stillMissing.join(', ')}: the data needs faces with and without each`);

  const card: Omit<HeadsCard, 'knownGaps'> = {
    dataSource: job.dataSource,
    dataTerms: job.dataTerms,
    faces: n,
    identities: new Set(keys).size,
    imagesWithoutFace: train.withoutFace,
    training: { seed: settings.seed, folds: settings.folds, inverseL2: settings.inverseL2, personDisjoint: identities !== null },
    crossValidatedAuc: aucs,
    positives,
    check: null,
  };
  const file: HeadsFile = { format: HEADS_FORMAT, features, heads, card: { ...card, knownGaps: [] } };
  if (check) file.card.check = checkReport(new HairHeads(file), check.extracted, check.groups, job.check!.folder);
  file.card.knownGaps = knownGaps(file.card, Object.keys(heads) as HeadName[]);
  await mkdir(dirname(job.out), { recursive: true });
  await writeFileAtomic(job.out, JSON.stringify(file) + '\n');
  await writeFileAtomic(cardPathOf(job.out), renderCard(file));
  print(`wrote ${job.out} and ${cardPathOf(job.out)}`);
  return file;
}

async function extractCheck(models: FaceModels, check: LabelledFolder, print: Print): Promise<{ extracted: Extracted; groups: Map<string, string> }> {
  const { images } = onDisk(check, 0);
  return { extracted: await extract(models, check.folder, images, 'check set', print), groups: check.pairs ? readPairsFile(check.pairs) : new Map() };
}
