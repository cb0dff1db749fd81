/**
 * The floor of creating the script's process the way the server does, through
 * its spawn helper (src/scripts/spawner.ts), without HTTP: `calls` runs,
 * `concurrency` at once, each reading the stdout and stderr the helper hands
 * over, from a process grown to `ballastMb` MB (the server's size; the helper
 * forks, so this size should not matter). CPU counts this process, the helper
 * and the scripts. Prints one JSON line.
 * Usage: node --import tsx helper-floor.ts <script> <calls> <concurrency> <ballastMb>
 */
import { dirname } from 'node:path';
import { createLogger } from '../../src/common/log.ts';
import { Spawner } from '../../src/scripts/spawner.ts';
import { cpuOfTree } from './cpu.ts';

const [file, calls, concurrency, ballastMb] = process.argv.slice(2) as [string, string, string, string];
const ballast = Array.from({ length: Number(ballastMb) }, () => Buffer.alloc(2 ** 20, 1));
const spawner = new Spawner(createLogger('silent', 'scripts'));

const once = async () => {
  const child = await spawner.spawn({ command: file, args: [], cwd: dirname(file), env: { PATH: '/usr/bin:/bin' }, stdin: null });
  const closed = [child.stdout, child.stderr].map((stream) => new Promise((resolve) => stream.once('close', resolve)));
  child.stdout.resume();
  child.stderr.resume();
  await Promise.all([child.exit, ...closed]);
};

// The helper starts with the first run: not part of the floor.
await once();
let left = Number(calls);
const cpuBefore = cpuOfTree(process.pid);
const started = performance.now();
await Promise.all(
  Array.from({ length: Number(concurrency) }, async () => {
    while (left-- > 0) await once();
  }),
);
const seconds = (performance.now() - started) / 1000;
const cpuMsPerCall = (cpuOfTree(process.pid) - cpuBefore) / Number(calls);
await spawner.close();
console.log(
  JSON.stringify({ perSecond: Number(calls) / seconds, cpuMsPerCall, rssMb: Math.round(process.memoryUsage().rss / 2 ** 20), ballastMb: ballast.length }),
);
