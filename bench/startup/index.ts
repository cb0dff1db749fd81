/**
 * Start-up: `npm run bench -- startup` (after `npm run build`). How long the
 * CLI takes to print its help, and a component to answer its first
 * `/health`, run as the package ships it (compiled `dist/cli.js`, plain node)
 * against the same source through tsx (a checkout). Builds alternate, 7
 * rounds, medians; CPU of the component's process from /proc.
 * OFFCLOUD_BENCH_CLI=label=path[,label=path…] adds other builds (another
 * checkout's src/cli.ts), as the gateway bench does. A quick run (`--quick`,
 * one round) without a build measures the source through tsx alone: the
 * component's first /health against the CLI's help.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../test/gateway/helpers.ts';
import { cpuWithEndedChildren } from '../common/cpu.ts';
import { median } from '../common/load.ts';
import { QUICK, sized } from '../common/quick.ts';
import { result, type BenchContext, type BenchResult } from '../common/result.ts';

const ROUNDS = sized(7, 1);

interface Build {
  label: string;
  args: string[];
}

function builds(): Build[] {
  const source = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
  const compiled = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
  const built = existsSync(compiled);
  if (!built && !QUICK) throw new Error('dist/cli.js is missing: run `npm run build` first');
  const extra = (process.env.OFFCLOUD_BENCH_CLI ?? '')
    .split(',')
    .filter(Boolean)
    .map((entry) => {
      const path = entry.slice(entry.indexOf('=') + 1);
      return { label: entry.slice(0, entry.indexOf('=')), args: path.endsWith('.ts') ? ['--import', 'tsx', path] : [path] };
    });
  return [...(built ? [{ label: 'compiled dist', args: [compiled] }] : []), { label: 'source through tsx', args: ['--import', 'tsx', source] }, ...extra];
}

async function untilHealthy(url: string, signal: AbortSignal): Promise<void> {
  for (;;) {
    signal.throwIfAborted();
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Milliseconds from spawn to the first 200 from /health, and the process's CPU by then. */
async function startOnce(build: Build, signal: AbortSignal): Promise<{ wallMs: number; cpuMs: number }> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, [...build.args, 'calculator', '--port', String(port)], { stdio: 'ignore' });
  try {
    await untilHealthy(`http://127.0.0.1:${port}/health`, signal);
    return { wallMs: performance.now() - started, cpuMs: cpuWithEndedChildren(child.pid!) };
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}

export async function run({ report, signal }: BenchContext): Promise<BenchResult[]> {
  const all = builds();
  const figures = new Map(all.map((b) => [b.label, { helpMs: [] as number[], wallMs: [] as number[], cpuMs: [] as number[] }]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const build of all) {
      const f = figures.get(build.label)!;
      const started = performance.now();
      const help = spawnSync(process.execPath, [...build.args, '--help'], { encoding: 'utf8' });
      if (help.status !== 0) throw new Error(`${build.label}: --help exited ${help.status}: ${help.stderr}`);
      f.helpMs.push(performance.now() - started);
      const start = await startOnce(build, signal);
      f.wallMs.push(start.wallMs);
      f.cpuMs.push(start.cpuMs);
    }
  }
  const summary = Object.fromEntries(
    [...figures].map(([label, f]) => [label, { helpMs: median(f.helpMs), calculatorReadyMs: median(f.wallMs), calculatorCpuMs: median(f.cpuMs) }]),
  );
  for (const [label, s] of Object.entries(summary)) {
    console.log(
      `${label.padEnd(24)} --help ${s.helpMs.toFixed(0)} ms; calculator spawn → first /health ${s.calculatorReadyMs.toFixed(0)} ms, ${s.calculatorCpuMs.toFixed(0)} ms CPU`,
    );
  }
  const ours = summary['compiled dist'];
  const tsx = summary['source through tsx']!;
  const results = !ours
    ? [
        result({
          name: 'startup (quick run, no build): offcloud calculator to its first /health through tsx (ms)',
          unit: 'ms',
          ours: tsx.calculatorReadyMs,
          baseline: 'offcloud --help through tsx',
          baselineValue: tsx.helpMs,
          better: 'lower',
          details: { rounds: ROUNDS, summary },
        }),
      ]
    : [
        result({
          name: 'startup: offcloud --help, compiled vs tsx (ms)',
          unit: 'ms',
          ours: ours.helpMs,
          baseline: 'source through tsx',
          baselineValue: tsx.helpMs,
          better: 'lower',
          details: { rounds: ROUNDS, summary },
        }),
        result({
          name: 'startup: offcloud calculator to its first /health, compiled vs tsx (ms)',
          unit: 'ms',
          ours: ours.calculatorReadyMs,
          baseline: 'source through tsx',
          baselineValue: tsx.calculatorReadyMs,
          better: 'lower',
          details: { rounds: ROUNDS, summary },
        }),
      ];
  results.forEach(report);
  return results;
}
