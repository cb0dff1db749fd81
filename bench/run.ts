/**
 * `npm run bench -- <component> [--timeout <seconds>]`: runs
 * bench/<component>/index.ts, which starts our server and its baseline side
 * by side in one run, and prints one line with the ratio plus the JSON result
 * for each figure.
 *
 * A bench always ends: figures are printed as they come (a bench hands each
 * to `report` when it has it; one that only returns them is printed at its
 * end), a failure prints what was measured before it, and past the timeout
 * the bench is told to stop (`signal`), given a moment to end its servers,
 * and any process it started that is still there is ended.
 */
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import type { BenchContext, BenchResult } from './common/result.ts';

const DEFAULT_TIMEOUT_S = 900;
/** After the timeout, how long the bench gets to end its servers itself. */
const CLEANUP_MS = 15_000;

const args = process.argv.slice(2);
const name = args.find((arg, i) => !arg.startsWith('--') && args[i - 1] !== '--timeout');
const timeoutAt = args.indexOf('--timeout');
const timeoutS = timeoutAt >= 0 ? Number(args[timeoutAt + 1]) : DEFAULT_TIMEOUT_S;
const file = name ? new URL(`./${name}/index.ts`, import.meta.url) : undefined;
if (!name || !file || !existsSync(file) || !(timeoutS > 0)) {
  console.error('usage: npm run bench -- <component> [--timeout <seconds>]   (a folder under bench/; default timeout 900 s)');
  process.exit(2);
}

const printed = new Set<string>();
function print(result: BenchResult): void {
  if (printed.has(result.name)) return;
  printed.add(result.name);
  console.log(
    `${result.name}: ours ${result.ours.toFixed(1)} ${result.unit}, baseline (${result.baseline}) ${result.baselineValue.toFixed(1)} ${result.unit}, ratio ${result.ratio.toFixed(2)} (${result.better} is better)`,
  );
  console.log(JSON.stringify(result));
}

/** Our own child processes still running (the bench's servers, baselines, load generators). */
function ownChildren(): number[] {
  const mine = String(process.pid);
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        // "pid (comm) state ppid …": comm may hold spaces, so read after its last ')'.
        return (
          readFileSync(`/proc/${pid}/stat`, 'utf8')
            .replace(/^.*\) /s, '')
            .split(' ')[1] === mine
        );
      } catch {
        return false;
      }
    })
    .map(Number);
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim().slice(0, 200);
  } catch {
    return 'gone';
  }
}

const controller = new AbortController();
const context: BenchContext = { report: print, signal: controller.signal };
const bench = (await import(pathToFileURL(file.pathname).href)) as { run(context: BenchContext): Promise<BenchResult[] | void> };
// Children already there (tsx's esbuild service) are the loader's, not the bench's.
const before = new Set(ownChildren());
const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), timeoutS * 1000).unref());
const running = bench.run(context);
let failed = false;
try {
  const outcome = await Promise.race([running, timeout]);
  if (outcome === 'timeout') {
    failed = true;
    console.error(`bench ${name}: no end after ${timeoutS} s; stopping it (figures so far are above)`);
    controller.abort(new Error(`timeout after ${timeoutS} s`));
    await Promise.race([running.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, CLEANUP_MS).unref())]);
  } else {
    for (const result of outcome ?? []) print(result);
  }
} catch (err) {
  failed = true;
  console.error(`bench ${name} failed: ${(err as Error).stack ?? String(err)}`);
}
for (const pid of ownChildren().filter((child) => !before.has(child))) {
  console.error(`bench ${name}: ending process ${pid} it left running (${commandLine(pid)})`);
  process.kill(pid, 'SIGKILL');
}
console.log(
  `bench ${name}: ${printed.size} figure(s); load average at the end ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
process.exit(failed ? 1 : 0);
