/**
 * `--quick`: the smoke run (`npm run bench -- all --quick`, part of `npm run
 * check`) that keeps every bench from rotting. A bench still starts its
 * servers and its baseline and measures each, only for about a second and
 * with small sizes: its figures show that the bench runs, not how fast
 * anything is. bench/run.ts passes the flag on to the bench's process and
 * sets OFFCLOUD_BENCH_QUICK=1 for the processes it starts.
 */
export const QUICK = process.argv.includes('--quick') || process.env.OFFCLOUD_BENCH_QUICK === '1';

/** The full run's value, or the smoke run's under --quick. */
export function sized<T>(full: T, quick: T): T {
  return QUICK ? quick : full;
}
