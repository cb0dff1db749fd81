/**
 * The model workers: N threads (one per core by default), each with its own
 * copy of the models, fed from one FIFO queue so that each worker measures one
 * image (or one share of an image's faces) at a time and the work of
 * concurrent requests, and of one request with many faces, spreads over the cores.
 */
import type { Worker } from 'node:worker_threads';
import { startTypeScriptWorker } from '../common/worker.ts';
import type { Logger } from 'pino';
import { StartupError } from '../common/errors.ts';
import { FaceApiError, type FaceErrorCode } from './errors.ts';
import type { MeasuredFace, Measurements, ModelPaths } from './models/index.ts';
import type { Region } from './models/image.ts';

const DETECTION_ONLY: Measurements = { analysis: null, glasses: false, mask: false, quality: false };

export interface WorkerRequest {
  id: number;
  /** The image file's bytes; the worker decodes them. */
  bytes: ArrayBuffer;
  wanted: Measurements;
  maxFaces: number;
  /** Faces found by an earlier detection: measure these instead of detecting again. */
  rectangles?: Region[];
}

export interface MeasuredImage {
  width: number;
  height: number;
  faces: MeasuredFace[];
}

export type WorkerReply =
  | { type: 'ready' }
  | { type: 'load-failed'; message: string }
  | ({ type: 'measured'; id: number } & MeasuredImage)
  /** The image itself was refused (undecodable, wrong size): an API error. */
  | { type: 'refused'; id: number; status: number; code: FaceErrorCode; message: string }
  | { type: 'failed'; id: number; message: string };

interface Task {
  request: WorkerRequest;
  resolve(image: MeasuredImage): void;
  reject(error: Error): void;
}

interface Slot {
  worker: Worker;
  /** False until the worker has loaded its models; only loaded workers get tasks. */
  loaded: boolean;
  busy: Task | null;
}

const WORKER_MODULE = new URL('./worker.ts', import.meta.url);

export class ModelPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Task[] = [];
  private nextId = 1;
  private closing = false;

  private constructor(
    private readonly paths: ModelPaths,
    private readonly logger: Logger,
  ) {}

  /** Starts `size` workers and resolves once every one has loaded its models. */
  static async start(size: number, paths: ModelPaths, logger: Logger): Promise<ModelPool> {
    const pool = new ModelPool(paths, logger);
    try {
      await Promise.all(Array.from({ length: size }, () => pool.addWorker()));
    } catch (err) {
      await pool.close();
      throw err;
    }
    return pool;
  }

  /**
   * Decodes and measures an image file; an image the decoder refuses rejects
   * with its FaceApiError. With several faces to analyse and several workers,
   * one worker finds the faces and the per-face work is then split across all
   * of them, so that one request also uses every core.
   */
  async measure(file: Uint8Array, wanted: Measurements, maxFaces: number): Promise<MeasuredImage> {
    const workers = this.slots.filter((slot) => slot.loaded).length;
    const perFace = wanted.analysis !== null || wanted.glasses || wanted.mask || wanted.quality;
    if (!perFace || workers < 2) return this.run(file, wanted, maxFaces);
    const found = await this.run(file, DETECTION_ONLY, maxFaces);
    if (found.faces.length < 2) return found.faces.length ? this.run(file, wanted, maxFaces, [found.faces[0]!.rectangle]) : found;
    // Contiguous shares keep the faces in their size order when the parts are joined.
    const rectangles = found.faces.map((face) => face.rectangle);
    const share = Math.ceil(rectangles.length / workers);
    const parts = await Promise.all(
      Array.from({ length: Math.ceil(rectangles.length / share) }, (_, i) =>
        this.run(file, wanted, maxFaces, rectangles.slice(i * share, (i + 1) * share)),
      ),
    );
    return { width: found.width, height: found.height, faces: parts.flatMap((part) => part.faces) };
  }

  private run(file: Uint8Array, wanted: Measurements, maxFaces: number, rectangles?: Region[]): Promise<MeasuredImage> {
    // A copy the worker can own: a request body's buffer may be a slice of a shared pool.
    const bytes = new Uint8Array(file).buffer;
    return new Promise((resolve, reject) => {
      this.queue.push({
        request: { id: this.nextId++, bytes, wanted, maxFaces, ...(rectangles ? { rectangles } : {}) },
        resolve,
        reject,
      });
      this.dispatch();
    });
  }

  async close(): Promise<void> {
    this.closing = true;
    for (const task of this.queue.splice(0)) task.reject(new Error('face container is shutting down'));
    await Promise.all([...this.slots].map((slot) => slot.worker.terminate()));
  }

  private addWorker(): Promise<void> {
    return new Promise((resolve, reject) => {
      const worker = startTypeScriptWorker(WORKER_MODULE, { workerData: this.paths });
      // Listed at once, so that close() also ends a worker still loading its models.
      const slot: Slot = { worker, loaded: false, busy: null };
      this.slots.push(slot);
      worker.on('message', (reply: WorkerReply) => {
        if (reply.type === 'ready') {
          slot.loaded = true;
          resolve();
          this.dispatch();
        } else if (reply.type === 'load-failed') {
          reject(new StartupError(`face: a model worker could not load the models: ${reply.message}`));
          void worker.terminate();
        } else {
          this.finish(slot, reply);
        }
      });
      worker.on('error', (err) => {
        if (!slot.loaded) reject(new StartupError(`face: a model worker failed to start: ${err.message}`));
        else this.logger.error({ err }, 'face model worker failed');
      });
      worker.on('exit', (code) => {
        const index = this.slots.indexOf(slot);
        if (index >= 0) this.slots.splice(index, 1);
        // A worker that died (or was ended by close) takes its one task with it.
        slot.busy?.reject(new Error(`model worker exited with code ${code}`));
        if (!slot.loaded || this.closing) return;
        // A fresh worker takes its place.
        this.logger.error({ code }, 'face model worker exited; starting another');
        this.addWorker().catch((err: Error) => this.logger.error({ err }, 'face model worker could not be replaced'));
      });
    });
  }

  private finish(slot: Slot, reply: Extract<WorkerReply, { id: number }>): void {
    const task = slot.busy;
    slot.busy = null;
    if (task && task.request.id === reply.id) {
      if (reply.type === 'measured') task.resolve({ width: reply.width, height: reply.height, faces: reply.faces });
      else if (reply.type === 'refused') task.reject(new FaceApiError(reply.status, reply.code, reply.message));
      else task.reject(new Error(reply.message));
    }
    this.dispatch();
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (slot.busy || !slot.loaded) continue;
      const task = this.queue.shift();
      if (!task) return;
      slot.busy = task;
      slot.worker.postMessage(task.request, [task.request.bytes]);
    }
  }
}
