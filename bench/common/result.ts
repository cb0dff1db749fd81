export interface BenchResult {
  name: string;
  unit: string;
  /** Our server's figure. */
  ours: number;
  /** What the baseline is (e.g. "bare node:http"). */
  baseline: string;
  baselineValue: number;
  /** ours / baseline. */
  ratio: number;
  better: 'higher' | 'lower';
  details?: Record<string, unknown>;
}

export function result(fields: Omit<BenchResult, 'ratio'>): BenchResult {
  return { ...fields, ratio: fields.ours / fields.baselineValue };
}

/** What bench/run.ts hands a bench's run(). */
export interface BenchContext {
  /** Prints a figure at once, so it survives a later round failing or the timeout. */
  report(result: BenchResult): void;
  /** Aborted at the timeout: the bench should stop and end its servers. */
  signal: AbortSignal;
}
