/**
 * The English model versions this container serves, named by the date each was
 * trained, as the service names its models: the n-gram model (fast) and the
 * sentence encoder fused with it (more accurate, far slower). Which one answers
 * a request that names none is the container's `--model-version`.
 */
import { resolve } from 'node:path';
import { StartupError } from '../common/errors.ts';
import { PACKAGE_ROOT } from '../common/models.ts';

export const NGRAM_VERSION = '2026-11-22';
export const ENCODER_VERSION = '2026-11-27';
export const MODEL_VERSIONS = [NGRAM_VERSION, ENCODER_VERSION] as const;
export type ModelVersion = (typeof MODEL_VERSIONS)[number];
/** The default: see docs/sentiment.md "Model versions" for the figures behind it. */
export const DEFAULT_MODEL_VERSION: ModelVersion = NGRAM_VERSION;

/** Where each version's trained files ship (the encoder itself comes from its npm package). */
export const NGRAM_MODEL_DIR = resolve(PACKAGE_ROOT, 'models', 'sentiment-en');
export const ENCODER_MODEL_DIR = resolve(PACKAGE_ROOT, 'models', 'sentiment-en-encoder');

/** The container's --model-version, checked (the command line checks it too; a caller in code may not). */
export function containerModelVersion(value: string): ModelVersion {
  if ((MODEL_VERSIONS as readonly string[]).includes(value)) return value as ModelVersion;
  throw new StartupError(`sentiment: --model-version ${value.slice(0, 40)} is not served; give one of ${MODEL_VERSIONS.join(', ')}`);
}
