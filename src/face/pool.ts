/**
 * The face container's model workers (the shared WorkerPool, one worker per
 * core by default, each with its own copy of the models). A photo is decoded
 * once, by one worker, into memory every worker can read; the detector's
 * passes over it (the whole photo, and tiles of a large one) are dealt to
 * all the workers, and so are its faces, each worker measuring its share in
 * one batch per model, so that one request also uses every core. A photo
 * with fewer faces than workers has its models split instead.
 */
import type { Logger } from 'pino';
import { WorkerPool } from '../common/worker-pool.ts';
import { FaceApiError, type FaceErrorCode } from './errors.ts';
import { facesAmong, passesOver, type Detection, type DetectorPass } from './models/detector.ts';
import { type MeasuredFace, type Measurements, type ModelSet } from './models/index.ts';
import type { Region } from './models/image.ts';

/** Decoded RGB pixels in memory shared by the workers. */
export interface SharedImage {
  pixels: SharedArrayBuffer;
  width: number;
  height: number;
}

export type FaceTask =
  /** Decode the file into shared memory (its bytes are the worker's to keep). */
  | { kind: 'decode'; bytes: ArrayBuffer }
  /** Run these detector passes over an image already decoded. */
  | { kind: 'find'; image: SharedImage; passes: DetectorPass[] }
  /** Measure these faces of an image already decoded. */
  | { kind: 'measure'; image: SharedImage; boxes: Region[]; wanted: Measurements };

export type FaceAnswer =
  | { kind: 'decoded'; image: SharedImage }
  /** What each pass found, in the order of the task's passes. */
  | { kind: 'found'; detections: Detection[][] }
  | { kind: 'measured'; faces: MeasuredFace[] }
  /** The image itself was refused (undecodable, wrong size): an API error. */
  | { kind: 'refused'; status: number; code: FaceErrorCode; message: string };

export interface MeasuredImage {
  width: number;
  height: number;
  faces: MeasuredFace[];
}

export class ModelPool {
  private constructor(private readonly pool: WorkerPool<FaceTask, FaceAnswer>) {}

  /** Starts `size` workers and resolves once every one has loaded its models. */
  static async start(size: number, models: ModelSet, logger: Logger): Promise<ModelPool> {
    const module = new URL('./worker.ts', import.meta.url);
    return new ModelPool(await WorkerPool.start<FaceTask, FaceAnswer>({ name: 'face', module, size, workerData: models, logger }));
  }

  /** Decodes and measures an image file; an image the decoder refuses rejects with its FaceApiError. */
  async measure(file: Uint8Array, wanted: Measurements, maxFaces: number): Promise<MeasuredImage> {
    // A copy the worker can own: a request body's buffer may be a slice of a shared pool.
    const bytes = new Uint8Array(file).buffer;
    const { image } = answerOf(await this.pool.run({ kind: 'decode', bytes }, [bytes]), 'decoded');
    const size = { width: image.width, height: image.height };
    const workers = Math.max(1, this.pool.workers);
    const passes = dealt(passesOver(size), workers);
    const found = await Promise.all(passes.map((share) => this.pool.run({ kind: 'find', image, passes: share })));
    const detections = undealt(found.map((part) => answerOf(part, 'found').detections)).flat();
    const boxes: Region[] = facesAmong(detections, size)
      .slice(0, maxFaces)
      .map(({ left, top, width, height }) => ({ left, top, width, height }));
    const perFace = Object.values(wanted).some(Boolean);
    if (!perFace || boxes.length === 0) return { ...size, faces: boxes.map((rectangle) => ({ rectangle })) };
    const groups = modelGroups(wanted);
    if (boxes.length < workers && groups.length > 1) {
      // Fewer faces than workers: each worker runs some of the models over every face.
      const parts = await Promise.all(groups.map((group) => this.pool.run({ kind: 'measure', image, boxes, wanted: group })));
      const measured = parts.map((part) => answerOf(part, 'measured').faces);
      return { ...size, faces: boxes.map((rectangle, i) => Object.assign({ rectangle }, ...measured.map((faces) => faces[i]))) };
    }
    // Faces dealt round, so that each worker gets as many large and small faces (whose costs differ:
    // glasses are read only on faces ≥ 60 px, larger crops take more samples).
    const parts = await Promise.all(dealt(boxes, workers).map((share) => this.pool.run({ kind: 'measure', image, boxes: share, wanted })));
    return { ...size, faces: undealt(parts.map((part) => answerOf(part, 'measured').faces)) };
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/** Items dealt round to at most `workers` shares: item i to share i mod workers; no share is empty. */
function dealt<T>(items: readonly T[], workers: number): T[][] {
  return Array.from({ length: Math.min(workers, items.length) }, (_, w) => items.filter((_, i) => i % workers === w));
}

/** The answers for dealt shares (one per item of each share) back in the items' order. */
function undealt<R>(shares: readonly R[][]): R[] {
  const count = shares.reduce((sum, share) => sum + share.length, 0);
  return Array.from({ length: count }, (_, i) => shares[i % shares.length]![Math.floor(i / shares.length)]!);
}

/** The models of the large group; every other model is in the small one, so none runs in both. */
const LARGE_MODELS: ReadonlySet<keyof Measurements> = new Set(['ageAndGender', 'hair', 'mesh']);

/**
 * The wanted models in two groups of similar cost: FaceRes (age, gender, and
 * the hair heads on its descriptor) and the mesh, the two large ones, and the small ones (emotion, glasses, mask,
 * blur/exposure/noise); an empty group is left out.
 */
function modelGroups(wanted: Measurements): Measurements[] {
  const large = { ...wanted };
  const small = { ...wanted };
  for (const model of Object.keys(wanted) as (keyof Measurements)[]) {
    if (LARGE_MODELS.has(model)) small[model] = false;
    else large[model] = false;
  }
  return [large, small].filter((group) => Object.values(group).some(Boolean));
}

function answerOf<K extends FaceAnswer['kind']>(answer: FaceAnswer, kind: K): Extract<FaceAnswer, { kind: K }> {
  if (answer.kind === 'refused') throw new FaceApiError(answer.status, answer.code, answer.message);
  if (answer.kind !== kind) throw new Error(`face worker answered ${answer.kind} to a ${kind} task`);
  return answer as Extract<FaceAnswer, { kind: K }>;
}
