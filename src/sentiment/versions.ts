/**
 * The English model versions this container serves, named by the date each was
 * trained, as the service names its models: the n-gram model (fast) and the
 * sentence encoder fused with it (more accurate, far slower). Which one answers
 * a request that names none is the container's `--model-version`.
 */
export const NGRAM_VERSION = '2026-11-22';
export const ENCODER_VERSION = '2026-11-27';
export const MODEL_VERSIONS = [NGRAM_VERSION, ENCODER_VERSION] as const;
export type ModelVersion = (typeof MODEL_VERSIONS)[number];
/** The default: see docs/sentiment.md "Model versions" for the figures behind it. */
export const DEFAULT_MODEL_VERSION: ModelVersion = NGRAM_VERSION;
