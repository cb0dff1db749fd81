/**
 * Scoring off the event loop (DESIGN "The event loop stays free"): a small
 * pool of worker threads, each holding the model; batches go round-robin.
 */
import type { Worker } from 'node:worker_threads';
import { startTypeScriptWorker } from '../common/worker.ts';
import type { MeasuredTexts } from './analyze.ts';
import type { ScoreReply, ScoreRequest } from './worker.ts';

interface Pending {
  resolve(measured: MeasuredTexts): void;
  reject(err: Error): void;
}

export class ScorerPool {
  #workers: Worker[] = [];
  #pending = new Map<number, Pending>();
  #nextId = 0;
  #next = 0;

  private constructor() {}

  /** Starts `size` workers and waits until each has loaded the model. */
  static async start(modelDir: string, size: number): Promise<ScorerPool> {
    const pool = new ScorerPool();
    await Promise.all(
      Array.from({ length: size }, () => {
        const worker = startTypeScriptWorker(new URL('./worker.ts', import.meta.url), { workerData: { modelDir } });
        pool.#workers.push(worker);
        return new Promise<void>((resolve, reject) => {
          worker.once('error', reject);
          worker.once('message', () => {
            worker.off('error', reject);
            worker.on('message', (reply: ScoreReply) => pool.#settle(reply));
            worker.on('error', (err) => pool.#failAll(err));
            resolve();
          });
        });
      }),
    ).catch(async (err: unknown) => {
      await pool.close();
      throw err;
    });
    return pool;
  }

  /** Lengths in text elements and scores in [0, 1], in the order of `texts`. */
  score(language: string, texts: string[], maxTextElements: number): Promise<MeasuredTexts> {
    const id = this.#nextId++;
    const worker = this.#workers[this.#next++ % this.#workers.length]!;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      worker.postMessage({ id, language, texts, maxTextElements } satisfies ScoreRequest);
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.#workers.map((w) => w.terminate()));
    this.#failAll(new Error('scorer closed'));
  }

  #settle(reply: ScoreReply): void {
    const pending = this.#pending.get(reply.id);
    if (!pending) return;
    this.#pending.delete(reply.id);
    if (reply.scores && reply.characters) pending.resolve({ characters: reply.characters, scores: reply.scores });
    else pending.reject(new Error(reply.error ?? 'scoring failed'));
  }

  #failAll(err: Error): void {
    for (const pending of this.#pending.values()) pending.reject(err);
    this.#pending.clear();
  }
}
