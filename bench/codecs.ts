/**
 * `npm run bench:codecs` (part of `npm run check`): a quick guard on the
 * speed-shaped codecs. Scoring's JSON request reader is timed against
 * JSON.parse of the same ~0.6 MB body, and its answer writer against
 * JSON.stringify of the same answer, in interleaved rounds in one process, so
 * that a loaded machine slows both sides alike. It fails only on a large
 * regression: a ratio above the generous limits below (the figures in
 * bench/scoring/RESULTS.md are far under them). CPU time per call and the load
 * average are printed beside each ratio; a loaded machine's figures are noise.
 */
import { loadavg } from 'node:os';
import { scoreRequestBody } from '../src/scoring/client.ts';
import { INPUT_LAYOUT, readTensorBody } from '../src/scoring/tensor-body.ts';
import { scoreAnswer } from '../src/scoring/answer.ts';
import { seededRandom } from '../src/common/random.ts';

/** ours / baseline above which the check fails. */
const LIMITS = { reader: 2.5, writer: 3 };
const ROUNDS = 15;
const CALLS_PER_ROUND = { reader: 4, writer: 200 };

/** CPU microseconds per call of fn, over `calls` calls. */
function cpuPerCall(fn: () => unknown, calls: number): number {
  const start = process.cpuUsage();
  for (let i = 0; i < calls; i++) fn();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / calls;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}

/** Medians of ours and the baseline over interleaved rounds. */
function compare(ours: () => unknown, baseline: () => unknown, calls: number): { ours: number; baseline: number } {
  const samples = { ours: [] as number[], baseline: [] as number[] };
  cpuPerCall(ours, calls);
  cpuPerCall(baseline, calls);
  for (let round = 0; round < ROUNDS; round++) {
    samples.ours.push(cpuPerCall(ours, calls));
    samples.baseline.push(cpuPerCall(baseline, calls));
  }
  return { ours: median(samples.ours), baseline: median(samples.baseline) };
}

const random = seededRandom(7);
const pixels = Uint8Array.from({ length: 3 * 224 * 224 }, () => Math.floor(random() * 256));
const body = Buffer.from(scoreRequestBody(pixels, 'integers'));
const text = body.toString('latin1');
const probabilities = Float32Array.from({ length: 1000 }, () => random() / 1000);
const answer = { result: Array.from(probabilities), time: 0.0123 };

const checks = [
  {
    name: 'reader',
    against: 'JSON.parse',
    limit: LIMITS.reader,
    ...compare(
      () => readTensorBody(body, INPUT_LAYOUT),
      () => JSON.parse(text),
      CALLS_PER_ROUND.reader,
    ),
  },
  {
    name: 'writer',
    against: 'JSON.stringify',
    limit: LIMITS.writer,
    ...compare(
      () => scoreAnswer(probabilities, answer.time),
      () => JSON.stringify(answer),
      CALLS_PER_ROUND.writer,
    ),
  },
];

console.log(
  `codecs: CPU time per call, medians of ${ROUNDS} interleaved rounds (load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')})`,
);
let failed = false;
for (const check of checks) {
  const ratio = check.ours / check.baseline;
  failed ||= ratio > check.limit;
  console.log(
    `  scoring ${check.name}: ${check.ours.toFixed(1)} µs, ${check.against} ${check.baseline.toFixed(1)} µs, ratio ${ratio.toFixed(2)} (limit ${check.limit})${ratio > check.limit ? '  FAILED' : ''}`,
  );
}
if (failed) {
  console.error('codecs: a ratio is above its limit: a large regression (or a machine too loaded to tell; run `npm run bench:codecs` again)');
  process.exit(1);
}
