/**
 * The floor of creating the script's process from Node: `child_process.spawn`
 * of the script, reading its stdout, `calls` times, `concurrency` at once,
 * in a process that first grows to `ballastMb` MB (Linux's fork copies the
 * page tables, so the cost grows with the parent's size). Plain JavaScript,
 * run without tsx: with no ballast it is the size of the spawn helper
 * (src/scripts/spawn-helper.js). Prints one JSON line.
 * Usage: node floor.mjs <script> <calls> <concurrency> <ballastMb>
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

const [file, calls, concurrency, ballastMb] = process.argv.slice(2);
const ballast = Array.from({ length: Number(ballastMb) }, () => Buffer.alloc(2 ** 20, 1));

/** CPU ms of this process and its ended children (utime, stime, cutime, cstime of /proc/self/stat). */
function cpuMs() {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 10;
}

const once = () =>
  new Promise((resolve) => {
    const child = spawn(file, [], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    child.stdout.resume();
    child.stderr.resume();
    child.once('close', resolve);
  });

let left = Number(calls);
const cpuBefore = cpuMs();
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
    cpuMsPerCall: (cpuMs() - cpuBefore) / Number(calls),
    rssMb: Math.round(process.memoryUsage().rss / 2 ** 20),
    ballastMb: ballast.length,
  }),
);
