/**
 * The ImageNet classifier behind POST /score: an ONNX model run by ONNX
 * Runtime's native thread pool (session.run is async native code, so the
 * event loop stays free), the pixel-scaling rule of §2.1, and softmax over
 * the model's 1000 outputs (§2.1: "softmax probabilities, in class-index order").
 */
import { availableParallelism } from 'node:os';
import * as ort from 'onnxruntime-node';
import { StartupError } from '../common/errors.ts';
import { SerialQueue } from '../common/serial-queue.ts';
import { invalidBody } from './errors.ts';
import type { InputScale, ModelOutput } from './options.ts';
import { INPUT_SHAPE, type ChannelTransform, type TensorBody } from './tensor-body.ts';

export const CLASS_COUNT = 1000;

export interface ClassifierOptions {
  modelPath: string;
  /** Threads ONNX Runtime uses inside one run; 0 = one per core. */
  threads: number;
  inputScale: InputScale;
  modelOutput: ModelOutput;
  /** Per-channel (R, G, B) normalisation of the model, on 0..1 values. */
  mean: readonly number[];
  std: readonly number[];
}

export interface Classification {
  /** 1000 softmax probabilities in class-index order. */
  result: number[];
  /** Seconds spent in the model run, measured here (§2.1 "measured by the scoring container"). */
  time: number;
}

/** Decides which scale a request's numbers are on, and refuses values that fit none. */
export function resolveInputScale(body: Pick<TensorBody, 'allIntegers' | 'min' | 'max'>, forced: InputScale): Exclude<InputScale, 'auto'> {
  const scale = forced !== 'auto' ? forced : body.min < 0 ? 'normalized' : body.allIntegers || body.max > 1 ? 'pixels' : 'unit';
  const limit = scale === 'pixels' ? 255 : scale === 'unit' ? 1 : Infinity;
  if (scale !== 'normalized' && (body.min < 0 || body.max > limit)) {
    throw invalidBody(
      `values range from ${body.min} to ${body.max}, outside 0..${limit} for ${scale === 'pixels' ? 'pixels' : '0..1 floats'}` +
        (forced === 'auto' ? ' (integers and values above 1 are read as 0..255 pixels)' : ` (the server reads input as ${scale})`),
      'data',
    );
  }
  return scale;
}

/**
 * The model's input per channel: v·scale + offset, with scale = k/std and
 * offset = −mean/std (k = 1/255 for pixels, 1 for 0..1 floats). The one place
 * these numbers are worked out: normalizeInput applies them to values read,
 * and the body reader applies the pixel ones as it reads (readerPixelTransform).
 */
export function channelTransform(scale: 'pixels' | 'unit', mean: readonly number[], std: readonly number[]): ChannelTransform {
  const k = scale === 'pixels' ? 1 / 255 : 1;
  return { scale: std.map((s) => k / s), offset: mean.map((m, c) => -m / std[c]!) };
}

/** Writes v·scale + offset in place, per channel (the values' equal thirds for three channels). */
function applyChannelTransform(values: Float32Array, transform: ChannelTransform): void {
  const channels = transform.scale.length;
  const plane = values.length / channels;
  for (let channel = 0; channel < channels; channel++) {
    const scale = transform.scale[channel]!;
    const offset = transform.offset[channel]!;
    const end = (channel + 1) * plane;
    for (let i = channel * plane; i < end; i++) values[i] = values[i]! * scale + offset;
  }
}

/** Writes the model's input in place: v·(k/std) − mean/std per channel, k = 1/255 for pixels. */
export function normalizeInput(values: Float32Array, scale: Exclude<InputScale, 'auto'>, mean: readonly number[], std: readonly number[]): void {
  if (scale !== 'normalized') applyChannelTransform(values, channelTransform(scale, mean, std));
}

export function softmax(logits: ArrayLike<number>): number[] {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i]! > max) max = logits[i]!;
  const out = new Array<number>(logits.length);
  let sum = 0;
  for (let i = 0; i < logits.length; i++) {
    out[i] = Math.exp(logits[i]! - max);
    sum += out[i]!;
  }
  for (let i = 0; i < out.length; i++) out[i]! /= sum;
  return out;
}

function looksLikeProbabilities(values: ArrayLike<number>): boolean {
  let sum = 0;
  for (let i = 0; i < values.length; i++) {
    if (!(values[i]! >= 0 && values[i]! <= 1)) return false;
    sum += values[i]!;
  }
  return Math.abs(sum - 1) < 1e-3;
}

/**
 * ONNX Runtime session options for a server: one thread per core inside a
 * run, full graph optimisation, quiet logging, and no spin-waiting between
 * runs, so idle pool threads leave the cores to the event loop reading the
 * next request body.
 */
export function serverSessionOptions(threads: number): ort.InferenceSession.SessionOptions {
  return {
    executionProviders: ['cpu'],
    intraOpNumThreads: threads > 0 ? threads : availableParallelism(),
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    // Warnings about initializers listed as graph inputs are noise for a served model.
    logSeverityLevel: 3,
    extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } },
  };
}

/** The pixel transform a body reader applies while it reads, when this input scale can mean pixels. */
export function readerPixelTransform(inputScale: InputScale, mean: readonly number[], std: readonly number[]): ChannelTransform | undefined {
  return readsPixels(inputScale) ? channelTransform('pixels', mean, std) : undefined;
}

/** Whether numbers can be read as pixels under this input scale (so a reader may apply the pixel transform as it reads). */
function readsPixels(inputScale: InputScale): boolean {
  return inputScale === 'auto' || inputScale === 'pixels';
}

export class ImageClassifier {
  /** Runs wait here so that one run at a time gets every thread, instead of runs fighting over cores. */
  private readonly runs = new SerialQueue();
  /**
   * Give this to the body reader: a body of pixel integers then comes with
   * the model's input already written (the same float32 values
   * normalizeInput would write), and classify() skips that pass.
   */
  readonly pixels: ChannelTransform | undefined;
  /** The input of pixels and of 0..1 floats read as written, made once for every request. */
  private readonly transforms: Record<'pixels' | 'unit', ChannelTransform>;

  private constructor(
    private readonly session: ort.InferenceSession,
    private readonly options: ClassifierOptions,
    readonly inputName: string,
    readonly outputName: string,
    readonly outputIsLogits: boolean,
  ) {
    this.transforms = { pixels: channelTransform('pixels', options.mean, options.std), unit: channelTransform('unit', options.mean, options.std) };
    this.pixels = readsPixels(options.inputScale) ? this.transforms.pixels : undefined;
  }

  static async load(options: ClassifierOptions): Promise<ImageClassifier> {
    let session: ort.InferenceSession;
    try {
      session = await ort.InferenceSession.create(options.modelPath, serverSessionOptions(options.threads));
    } catch (err) {
      throw new StartupError(`cannot load model ${options.modelPath}: ${(err as Error).message}`);
    }
    const inputName = session.inputNames[0];
    const outputName = session.outputNames[0];
    if (!inputName || !outputName) throw new StartupError(`model ${options.modelPath} has no input or no output`);
    // One run at load: checks the shapes and warms the thread pool, so the first request is not slow.
    let output: Float32Array;
    try {
      const warmup = await session.run({ [inputName]: new ort.Tensor('float32', new Float32Array(INPUT_SHAPE.reduce((a, d) => a * d, 1)), [...INPUT_SHAPE]) });
      output = warmup[outputName]!.data as Float32Array;
    } catch (err) {
      await session.release();
      throw new StartupError(`model ${options.modelPath} does not take a float32 [1,3,224,224] input: ${(err as Error).message}`);
    }
    if (output.length !== CLASS_COUNT) {
      await session.release();
      throw new StartupError(`model ${options.modelPath} gives ${output.length} values; an ImageNet-1k classifier gives ${CLASS_COUNT}`);
    }
    const logits = options.modelOutput === 'auto' ? !looksLikeProbabilities(output) : options.modelOutput === 'logits';
    return new ImageClassifier(session, options, inputName, outputName, logits);
  }

  /** Classifies one parsed request body (its values are normalised in place). */
  async classify(body: TensorBody): Promise<Classification> {
    const scale = resolveInputScale(body, this.options.inputScale);
    if (body.pixelsApplied) {
      // Only integers 0..999 were read; resolveInputScale refused anything but pixels for them.
      if (scale !== 'pixels') throw new Error(`a body read as pixels resolved to the ${scale} scale`);
    } else if (scale !== 'normalized') applyChannelTransform(body.values, this.transforms[scale]);
    const { output, seconds } = await this.run(body.values);
    return { result: this.outputIsLogits ? softmax(output) : Array.from(output), time: seconds };
  }

  /** The model itself on a prepared input: its raw output and the seconds the run took. */
  run(input: Float32Array): Promise<{ output: Float32Array; seconds: number }> {
    return this.runs.run(async () => {
      const tensor = new ort.Tensor('float32', input, INPUT_SHAPE);
      const started = performance.now();
      const results = await this.session.run({ [this.inputName]: tensor });
      const seconds = (performance.now() - started) / 1000;
      return { output: results[this.outputName]!.data as Float32Array, seconds };
    });
  }

  async close(): Promise<void> {
    await this.runs.idle();
    await this.session.release();
  }
}
