/**
 * `npm run bench -- <component> [--quick] [--timeout <seconds>]`: runs
 * bench/<component>/index.ts, which starts our server and its baseline side
 * by side in one run, and prints one line with the ratio plus the JSON result
 * for each figure. `--quick` is the smoke run (bench/common/quick.ts).
 *
 * `npm run bench -- all [--quick]` runs every bench, each in its own process
 * (one after the other; with --quick one per core at once), and fails unless
 * each ended well with at least one figure: `all --quick` is a step of `npm run check`, so a bench that no
 * longer starts (a renamed file, a changed API) fails CI.
 *
 * A bench always ends: figures are printed as they come (a bench hands each
 * to `report` when it has it; one that only returns them is printed at its
 * end), a failure prints what was measured before it, and past the timeout
 * the bench is told to stop (`signal`), given a moment to end its servers,
 * and any process it started that is still there is ended.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { BenchContext, BenchResult } from './common/result.ts';

const DEFAULT_TIMEOUT_S = 900;
/** A bench's limit in a quick run: starting servers through tsx on a busy machine is most of it. */
const QUICK_TIMEOUT_S = 180;
/** After the timeout, how long the bench gets to end its servers itself. */
const CLEANUP_MS = 15_000;

const args = process.argv.slice(2);
const name = args.find((arg, i) => !arg.startsWith('--') && args[i - 1] !== '--timeout');
const quick = args.includes('--quick');
const timeoutAt = args.indexOf('--timeout');
const timeoutS = timeoutAt >= 0 ? Number(args[timeoutAt + 1]) : quick ? QUICK_TIMEOUT_S : DEFAULT_TIMEOUT_S;
const benches = readdirSync(new URL('.', import.meta.url), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(new URL(`./${entry.name}/index.ts`, import.meta.url)))
  .map((entry) => entry.name)
  .sort();
if (!name || (name !== 'all' && !benches.includes(name)) || !(timeoutS > 0)) {
  console.error(
    `usage: npm run bench -- <component>|all [--quick] [--timeout <seconds>]   (a folder under bench/: ${benches.join(', ')}; default timeout ${DEFAULT_TIMEOUT_S} s, ${QUICK_TIMEOUT_S} s with --quick)`,
  );
  process.exit(2);
}
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

// The processes a bench starts (its servers, a client) read it from here.
if (quick) process.env.OFFCLOUD_BENCH_QUICK = '1';
if (name === 'all') process.exit(await runAll());

/**
 * Each bench in its own process; the exit status says whether every one ended
 * well with a figure. Full runs go one at a time (they measure); quick runs
 * only check that each bench still runs, so they go one per core at once,
 * each one's output printed whole when it ends.
 */
async function runAll(): Promise<number> {
  const jobs = quick ? availableParallelism() : 1;
  const outcomes = new Map<string, string>();
  let failures = 0;
  const started = Date.now();
  const runOne = async (bench: string) => {
    const benchStarted = Date.now();
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), bench, ...args.filter((arg) => arg !== 'all')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (jobs === 1) process.stdout.write(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
      if (jobs === 1) process.stderr.write(chunk);
    });
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    if (jobs > 1) {
      process.stdout.write(`\n── bench ${bench} ──\n${out}`);
      process.stderr.write(err);
    }
    const figures = Number(new RegExp(`^bench ${bench}: (\\d+) figure`, 'm').exec(out)?.[1] ?? 0);
    const ok = code === 0 && figures > 0;
    if (!ok) failures++;
    outcomes.set(
      bench,
      `${ok ? 'ok  ' : 'FAIL'} ${bench.padEnd(12)} ${String(figures).padStart(2)} figure(s), exit ${code}, ${((Date.now() - benchStarted) / 1000).toFixed(0)} s`,
    );
  };
  const queue = [...benches];
  await Promise.all(
    Array.from({ length: jobs }, async () => {
      for (let bench = queue.shift(); bench; bench = queue.shift()) await runOne(bench);
    }),
  );
  console.log(
    `\nbench all${quick ? ' --quick' : ''}: ${benches.length - failures} of ${benches.length} ran with figures in ${((Date.now() - started) / 1000).toFixed(0)} s, ${jobs} at a time; load average ${load()}`,
  );
  for (const bench of benches) console.log(outcomes.get(bench));
  return failures ? 1 : 0;
}
const file = new URL(`./${name}/index.ts`, import.meta.url);

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
console.log(`bench ${name}: ${printed.size} figure(s); load average at the end ${load()}`);
process.exit(failed ? 1 : 0);
