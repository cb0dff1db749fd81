/** The sentiment container's options, apart from its server so the CLI can list them without loading it. */
import { commonOptions, portOption } from '../common/config.ts';
import { containerOptions } from '../cognitive/startup.ts';
import { UNMEASURED_LEXICON_LANGUAGES } from './lexicons.ts';
import { DEFAULT_MODEL_VERSION, ENCODER_VERSION, MODEL_VERSIONS, NGRAM_VERSION } from './versions.ts';

export const sentimentOptions = {
  ...commonOptions,
  port: portOption(5000),
  ...containerOptions,
  model: { type: 'string', default: '', description: 'folder of the English n-gram model (default: models/sentiment-en in the package)' },
  modelVersion: {
    type: 'string',
    default: DEFAULT_MODEL_VERSION,
    choices: MODEL_VERSIONS,
    description: `English model for v2, and for v3/Language requests that name none or "latest": ${NGRAM_VERSION} (n-gram, fast) or ${ENCODER_VERSION} (sentence encoder fused with it: more accurate, far slower)`,
  },
  unmeasuredLanguages: {
    type: 'boolean',
    default: false,
    description: `also score ${UNMEASURED_LEXICON_LANGUAGES.join(', ')} by their lexicons, whose accuracy nobody has measured (without it they get the unsupported-language error)`,
  },
  workers: { type: 'integer', default: 1, min: 1, max: 64, description: 'scoring threads' },
  maxDocuments: { type: 'integer', default: 1000, min: 1, max: 100_000, description: 'most documents in one v2 request' },
  maxDocumentsV3: {
    type: 'integer',
    default: 10,
    min: 1,
    max: 100_000,
    description: "most documents in one v3.x or Language API request (10, the service's sentiment limit)",
  },
  maxDocumentGraphemes: { type: 'integer', default: 5120, min: 1, max: 1_000_000, description: 'longest document, in text elements (grapheme clusters)' },
  maxRequestBytes: { type: 'integer', default: 1024 * 1024, min: 1024, max: 100 * 1024 * 1024, description: 'largest request body, in bytes' },
} as const;
