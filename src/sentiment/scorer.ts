/**
 * Scoring off the event loop (DESIGN "The event loop stays free"): the shared
 * worker pool, each worker holding the model; batches go to the next free one.
 */
import { WorkerPool } from '../common/worker-pool.ts';
import type { MeasuredTexts } from './analyze.ts';
import type { ScoreRequest } from './worker.ts';

export class ScorerPool {
  private constructor(private readonly pool: WorkerPool<ScoreRequest, MeasuredTexts>) {}

  /** Starts `size` workers and waits until each has loaded the model. */
  static async start(modelDir: string, size: number): Promise<ScorerPool> {
    const module = new URL('./worker.ts', import.meta.url);
    return new ScorerPool(await WorkerPool.start<ScoreRequest, MeasuredTexts>({ name: 'sentiment', module, size, workerData: { modelDir } }));
  }

  /** Lengths in text elements and scores in [0, 1] (and those of each sentence when asked), in the order of `texts`. */
  score(language: string, texts: string[], maxTextElements: number, sentences: boolean, opinions: boolean): Promise<MeasuredTexts> {
    return this.pool.run({ language, texts, maxTextElements, sentences, opinions });
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
