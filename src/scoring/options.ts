/**
 * Options of the scoring container and its front-end, apart from their
 * servers so the CLI can list them without loading ONNX Runtime or fastify.
 */
import { commonOptions, portOption, tlsOptions, type OptionSchema } from '../common/config.ts';
import { DEFAULT_MODEL } from '../models/catalogue.ts';

/**
 * How request numbers map to the model's input. `auto`: any negative value →
 * already normalised; else integers, or any value above 1 → 0..255 pixels;
 * else 0..1 floats. Pixels and unit floats then get (x − mean) / std.
 */
export const INPUT_SCALES = ['auto', 'pixels', 'unit', 'normalized'] as const;
export type InputScale = (typeof INPUT_SCALES)[number];

/** Whether the model's outputs are logits (softmax applied) or probabilities already; `auto` looks once at load. */
export const MODEL_OUTPUTS = ['auto', 'logits', 'probabilities'] as const;
export type ModelOutput = (typeof MODEL_OUTPUTS)[number];

/** The front-end's service under `offcloud up`, and the one `offcloud score --frontend` asks by default. */
export const DEFAULT_SERVICE = 'imagenet';

export const scoringOptions = {
  ...commonOptions,
  port: portOption(5001),
  model: {
    type: 'string',
    default: '',
    description: `ONNX ImageNet-1k classifier taking float32 [1,3,224,224] and giving 1000 values (default: ${DEFAULT_MODEL.relativePath} in $OFFCLOUD_MODELS_DIR, <data-dir>/models or the package's own models/)`,
  },
  inputScale: {
    type: 'string',
    default: 'auto',
    choices: INPUT_SCALES,
    description:
      'how request numbers are read: auto (negative → normalized; integers or any value > 1 → 0..255 pixels; else 0..1 floats), pixels, unit, normalized',
  },
  modelOutput: {
    type: 'string',
    default: 'auto',
    choices: MODEL_OUTPUTS,
    description: 'whether the model gives logits (softmax is applied) or probabilities; auto decides from one run at load',
  },
  mean: { type: 'list', default: ['0.485', '0.456', '0.406'], description: "the model's per-channel mean (R,G,B) on 0..1 values" },
  std: { type: 'list', default: ['0.229', '0.224', '0.225'], description: "the model's per-channel standard deviation (R,G,B)" },
  threads: { type: 'integer', default: 0, min: 0, max: 256, description: 'ONNX Runtime threads per run (0 = one per core)' },
  maxBodyBytes: {
    type: 'integer',
    default: 16 * 1024 * 1024,
    min: 1024,
    max: 256 * 1024 * 1024,
    description: 'largest request body in bytes (150,528 numbers are 0.6 MB as pixels, about 3 MB as 17-digit floats)',
  },
} satisfies OptionSchema;

export const frontendOptions = {
  ...commonOptions,
  ...tlsOptions,
  port: portOption(5080),
  tls: { type: 'boolean', default: false, description: 'serve HTTPS (the local CA leaf, or --tls-cert/--tls-key); given files turn it on too' },
  services: {
    type: 'list',
    default: [`${DEFAULT_SERVICE}=127.0.0.1:5001`],
    description: 'services and their scoring replicas: name=host:port[+host:port…] (scheme http:// optional)',
  },
  healthIntervalMs: { type: 'integer', default: 5000, min: 50, max: 3_600_000, description: 'how often each replica GET /ready is checked, in ms' },
  timeoutMs: { type: 'integer', default: 30_000, min: 100, max: 600_000, description: 'connect/answer timeout towards a replica, in ms' },
  maxBodyBytes: scoringOptions.maxBodyBytes,
} satisfies OptionSchema;
