/**
 * Scoring off the event loop (DESIGN "The event loop stays free"): the shared
 * worker pool, each worker holding the model; batches go to the next free one.
 */
import { WorkerPool } from '../common/worker-pool.ts';
import type { MeasuredTexts, ScoreOptions } from './analyze.ts';
import type { ModelVersion } from './versions.ts';
import type { ScoreRequest, ScorerData } from './worker.ts';

export class ScorerPool {
  private constructor(private readonly pool: WorkerPool<ScoreRequest, MeasuredTexts>) {}

  /** Starts `size` workers and waits until each has loaded the models (the encoder's only when `preload` names its version). */
  static async start(models: { ngramDir: string; encoderDir: string; preload: ModelVersion }, size: number): Promise<ScorerPool> {
    const module = new URL('./worker.ts', import.meta.url);
    const workerData: ScorerData = models;
    return new ScorerPool(await WorkerPool.start<ScoreRequest, MeasuredTexts>({ name: 'sentiment', module, size, workerData }));
  }

  /** Lengths in text elements and scores in [0, 1] (and those of each sentence when asked), in the order of `texts`. */
  score(language: string, texts: string[], options: ScoreOptions): Promise<MeasuredTexts> {
    return this.pool.run({ language, texts, ...options });
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
