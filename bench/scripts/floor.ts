/**
 * The floor of creating the script's process from Node: `child_process.spawn`
 * of the script, reading its stdout, `calls` times, `concurrency` at once,
 * in a process that first grows to `ballastMb` MB (Linux's fork copies the
 * page tables, so the cost grows with the parent's size). Prints one JSON line.
 * Usage: node --import tsx floor.ts <script> <calls> <concurrency> <ballastMb>
 */
import { spawn } from 'node:child_process';
import { cpuWithEndedChildren } from '../common/cpu.ts';

const [file, calls, concurrency, ballastMb] = process.argv.slice(2) as [string, string, string, string];
const ballast = Array.from({ length: Number(ballastMb) }, () => Buffer.alloc(2 ** 20, 1));

const once = () =>
  new Promise((resolve) => {
    const child = spawn(file, [], { stdio: ['ignore', 'pipe', 'ignore'], detached: true });
    child.stdout.resume();
    child.once('close', resolve);
  });

let left = Number(calls);
const cpuBefore = cpuWithEndedChildren('self');
const started = performance.now();
await Promise.all(
  Array.from({ length: Number(concurrency) }, async () => {
    while (left-- > 0) await once();
  }),
);
const seconds = (performance.now() - started) / 1000;
console.log(
  JSON.stringify({
    perSecond: Number(calls) / seconds,
    cpuMsPerCall: (cpuWithEndedChildren('self') - cpuBefore) / Number(calls),
    rssMb: Math.round(process.memoryUsage().rss / 2 ** 20),
    ballastMb: ballast.length,
  }),
);
