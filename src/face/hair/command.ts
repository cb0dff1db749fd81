/**
 * `offcloud models train face-hair`: the command line of the hair trainer
 * (src/face/hair/train.ts). CelebA may only be used for non-commercial
 * research and never redistributed, so `--celeba` runs only with
 * `--accept-celeba-terms`, and the card records what was accepted; any
 * other labelled folder is `--images <dir> --terms <its terms>`.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { commandDataDir, parseCommandArgs, toStdout, type Print } from '../../common/command-line.ts';
import { UsageError } from '../../common/errors.ts';
import { resolveModelFile } from '../../common/models.ts';
import { EYEGLASSES, FACE_DETECTOR, MASK_MODEL, SUNGLASSES, type ModelFile } from '../../models/catalogue.ts';
import { HAIR_HEADS_PATH } from './heads.ts';
import { DEFAULT_TRAIN_SETTINGS, trainHairHeads, type LabelledFolder } from './train.ts';

const TRAIN_USAGE =
  'offcloud models train face-hair (--celeba <dir> --accept-celeba-terms | --images <dir> --terms <text>) [--attributes <file>] [--identities <file>] ' +
  '[--check <dir>] [--out <file>] [--seed N] [--folds N] [--l2-c C] [--limit N] [--models-dir DIR | --data-dir DIR]';

const OPTIONS = {
  celeba: { type: 'string' },
  'accept-celeba-terms': { type: 'boolean', default: false },
  images: { type: 'string' },
  terms: { type: 'string' },
  attributes: { type: 'string' },
  identities: { type: 'string' },
  check: { type: 'string' },
  out: { type: 'string' },
  seed: { type: 'string' },
  folds: { type: 'string' },
  'l2-c': { type: 'string' },
  limit: { type: 'string' },
  'models-dir': { type: 'string' },
  'data-dir': { type: 'string' },
} as const;

/** CelebA's terms, as its authors state them, which the user accepts with --accept-celeba-terms. */
export const CELEBA_TERMS =
  'CelebA is available for non-commercial research purposes only; its images and labels may not be redistributed or used commercially. ' +
  'The user accepted these terms with --accept-celeba-terms; heads trained on CelebA inherit them.';

/** The first of a folder's files that exists, or null. */
const firstIn = (folder: string, names: string[]) => names.map((name) => resolve(folder, name)).find((path) => existsSync(path)) ?? null;

/** A labelled folder with its attribute file (given or found) and its pairs file (given or found, or none). */
function labelledFolder(
  folder: string,
  attributes: string | undefined,
  pairs: string | undefined,
  attributeNames: string[],
  pairNames: string[],
): LabelledFolder {
  if (!existsSync(folder)) throw new UsageError(`${folder} does not exist`);
  const attributeFile = attributes ? resolve(attributes) : firstIn(folder, attributeNames);
  if (!attributeFile || !existsSync(attributeFile))
    throw new UsageError(`no attribute file (${attributeNames.join(' or ')}) in ${folder}; give --attributes <file>`);
  const pairsFile = pairs ? resolve(pairs) : firstIn(folder, pairNames);
  if (pairsFile && !existsSync(pairsFile)) throw new UsageError(`${pairsFile} does not exist`);
  return { folder: resolve(folder), attributes: attributeFile, pairs: pairsFile };
}

function integer(value: string | undefined, name: string, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`--${name} must be an integer ≥ ${min}`);
  return n;
}

export async function trainModel(args: string[], print: Print = toStdout): Promise<number> {
  const { values, positionals } = parseCommandArgs(args, OPTIONS, TRAIN_USAGE);
  if (positionals.length !== 1 || positionals[0] !== 'face-hair') throw new UsageError(`only face-hair can be trained\nusage: ${TRAIN_USAGE}`);
  if (values.celeba !== undefined && values.images !== undefined) throw new UsageError('give --celeba or --images, not both');
  if (values.celeba !== undefined && !values['accept-celeba-terms']) {
    throw new UsageError(
      `${CELEBA_TERMS.split(';')[0]}. Add --accept-celeba-terms to confirm that your use is non-commercial research and that you will not redistribute the data or the heads.`,
    );
  }
  if (values.images !== undefined && !values.terms) throw new UsageError('--images needs --terms <the terms under which you may use those images>');
  const folder = values.celeba ?? values.images;
  if (folder === undefined) throw new UsageError(`give the labelled images\nusage: ${TRAIN_USAGE}`);
  const l2 = values['l2-c'] === undefined ? DEFAULT_TRAIN_SETTINGS.inverseL2 : Number(values['l2-c']);
  if (!(l2 > 0)) throw new UsageError('--l2-c must be a number > 0');
  const dataDir = commandDataDir(values['data-dir']);
  const modelsDir = resolve(values['models-dir'] ?? process.env.OFFCLOUD_MODELS_DIR ?? resolve(dataDir, 'models'));
  const find = (file: ModelFile) => resolveModelFile({ ...file, dataDir });
  await trainHairHeads({
    data: labelledFolder(folder, values.attributes, values.identities, ['list_attr_celeba.txt', 'attributes.txt'], ['identity_CelebA.txt', 'identities.txt']),
    dataSource: values.celeba !== undefined ? `CelebA images in ${resolve(folder)}` : resolve(folder),
    dataTerms: values.celeba !== undefined ? CELEBA_TERMS : values.terms!,
    check: values.check ? labelledFolder(values.check, undefined, undefined, ['attributes.txt'], ['groups.txt']) : null,
    out: resolve(values.out ?? resolve(modelsDir, HAIR_HEADS_PATH)),
    settings: {
      seed: integer(values.seed, 'seed', DEFAULT_TRAIN_SETTINGS.seed, 0),
      folds: integer(values.folds, 'folds', DEFAULT_TRAIN_SETTINGS.folds, 2),
      inverseL2: l2,
      limit: integer(values.limit, 'limit', DEFAULT_TRAIN_SETTINGS.limit, 0),
    },
    modelPaths: { detector: find(FACE_DETECTOR), eyeglasses: find(EYEGLASSES), sunglasses: find(SUNGLASSES), mask: find(MASK_MODEL) },
    print,
  });
  return 0;
}
