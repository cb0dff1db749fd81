/**
 * The face container's model workers (the shared WorkerPool, one worker per
 * core by default, each with its own copy of the models). A photo is decoded
 * once, by the worker that finds its faces, into memory every worker can
 * read; its faces are then split over all the workers, each measuring its
 * share in one batch per model, so that one request also uses every core.
 * A photo with fewer faces than workers has its models split instead.
 */
import type { Logger } from 'pino';
import { WorkerPool } from '../common/worker-pool.ts';
import { FaceApiError, type FaceErrorCode } from './errors.ts';
import { type MeasuredFace, type Measurements, type ModelSet } from './models/index.ts';
import type { Region } from './models/image.ts';

/** Decoded RGB pixels in memory shared by the workers. */
export interface SharedImage {
  pixels: SharedArrayBuffer;
  width: number;
  height: number;
}

export type FaceTask =
  /** Decode the file and find its faces (its bytes are the worker's to keep). */
  | { kind: 'detect'; bytes: ArrayBuffer; maxFaces: number }
  /** Measure these faces of an image already decoded. */
  | { kind: 'measure'; image: SharedImage; boxes: Region[]; wanted: Measurements };

export type FaceAnswer =
  | { kind: 'detected'; image: SharedImage; boxes: Region[] }
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
    const found = answerOf(await this.pool.run({ kind: 'detect', bytes, maxFaces }, [bytes]), 'detected');
    const { image, boxes } = found;
    const perFace = Object.values(wanted).some(Boolean);
    const size = { width: image.width, height: image.height };
    if (!perFace || boxes.length === 0) return { ...size, faces: boxes.map((rectangle) => ({ rectangle })) };
    const workers = Math.max(1, this.pool.workers);
    const groups = modelGroups(wanted);
    if (boxes.length < workers && groups.length > 1) {
      // Fewer faces than workers: each worker runs some of the models over every face.
      const parts = await Promise.all(groups.map((group) => this.pool.run({ kind: 'measure', image, boxes, wanted: group })));
      const measured = parts.map((part) => answerOf(part, 'measured').faces);
      return { ...size, faces: boxes.map((rectangle, i) => Object.assign({ rectangle }, ...measured.map((faces) => faces[i]))) };
    }
    // Faces dealt round (face i to worker i mod workers), so that each worker gets as many large and small faces
    // (whose costs differ: glasses are read only on faces ≥ 60 px, larger crops take more samples).
    const shares = Array.from({ length: Math.min(workers, boxes.length) }, (_, w) => boxes.flatMap((box, i) => (i % workers === w ? [box] : [])));
    const parts = await Promise.all(shares.map((share) => this.pool.run({ kind: 'measure', image, boxes: share, wanted })));
    const measured = parts.map((part) => answerOf(part, 'measured').faces);
    return { ...size, faces: boxes.map((_, i) => measured[i % workers]![Math.floor(i / workers)]!) };
  }

  close(): Promise<void> {
    return this.pool.close();
  }
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
