/**
 * Script-trigger server against Debian's `webhook` serving the same two-line
 * script in the same run: calls/s with p50/p99 and CPU time per call (the
 * server, its spawn helper and the scripts) at concurrency 1 and 8
 * (autocannon, alternating rounds); the floors of creating that process
 * (Node's `child_process.spawn` in a process of our server's size and in one
 * of the helper's, our spawn helper driven without HTTP, posix_spawn from a
 * small Python process); and the delay from a line being printed to it
 * reaching the client (webhook answers only when the script ends). Last, a
 * table of all of them side by side.
 *
 * Each step reports its figure as soon as it has it; a step that fails is
 * named at the end and the others still run; every server is ended.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import { request } from 'undici';
import { startChildServers } from '../common/child.ts';
import { alternate, median } from '../common/load.ts';
import { sized } from '../common/quick.ts';
import { result, type BenchContext, type BenchResult } from '../common/result.ts';
import { cpuOfTree } from './cpu.ts';

const WEBHOOK = '/usr/bin/webhook';
const SECONDS = sized(4, 1);
const ROUNDS = sized(3, 1);
const FLOOR_CALLS = sized(200, 10);
/** No single step may take longer than this (the load rounds take 2 × ROUNDS × SECONDS). */
const STEP_LIMIT_MS = 120_000;
const TWO_LINES = '#!/bin/sh\necho "hello $PARAM_NAME"\necho "second line"\n';
const TIMESTAMPS = '#!/bin/sh\nfor i in 1 2 3 4 5 6 7 8 9 10; do date +%s%N; sleep 0.05; done\n';
const run$ = promisify(execFile);

interface Load {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU time of the server and the scripts it ran, per call. */
  cpuMsPerCall: number;
}

async function load(url: string, connections: number, serverPid: number, signal: AbortSignal): Promise<Load> {
  signal.throwIfAborted();
  const cpuBefore = cpuOfTree(serverPid);
  const out = await autocannon({ url, connections, duration: SECONDS });
  const calls = out.requests.total;
  return {
    rps: out.requests.average,
    p50: out.latency.p50,
    p99: out.latency.p99,
    errors: out.errors + out.non2xx,
    cpuMsPerCall: calls ? (cpuOfTree(serverPid) - cpuBefore) / calls : NaN,
  };
}

/** Starts webhook with one hook per script and waits until it answers (it logs nothing unless -verbose). */
async function startWebhook(dir: string, port: number, scripts: Record<string, string>): Promise<ChildProcess> {
  const hooks = Object.entries(scripts).map(([id, file]) => ({
    id,
    'execute-command': file,
    'include-command-output-in-response': true,
    'pass-environment-to-command': [{ source: 'url', name: 'name', envname: 'PARAM_NAME' }],
  }));
  await writeFile(join(dir, 'hooks.json'), JSON.stringify(hooks));
  const child = spawn(WEBHOOK, ['-hooks', join(dir, 'hooks.json'), '-ip', '127.0.0.1', '-port', String(port)], { stdio: 'ignore' });
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await (await request(`http://127.0.0.1:${port}/`)).body.dump();
      return child;
    } catch (err) {
      if (Date.now() > deadline || child.exitCode !== null) {
        child.kill();
        throw new Error(`webhook did not start: ${(err as Error).message}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

interface Floor {
  perSecond: number;
  cpuMsPerCall: number;
}

/** Runs one floor measurement (a process that prints one JSON line). */
async function measureFloor(command: string, args: string[], signal: AbortSignal): Promise<Floor & { rssMb?: number }> {
  const { stdout } = await run$(command, args, { signal, timeout: STEP_LIMIT_MS });
  return JSON.parse(stdout) as Floor & { rssMb?: number };
}

const here = (file: string) => new URL(file, import.meta.url).pathname;

/** Node's spawn of the script from a plain Node process (the helper's size) grown to `ballastMb`. */
const nodeSpawnFloor = (file: string, concurrency: number, ballastMb: number, signal: AbortSignal) =>
  measureFloor(process.execPath, [here('./floor.mjs'), file, String(FLOOR_CALLS), String(concurrency), String(ballastMb)], signal);

/** Our spawn helper, driven without HTTP from a process grown to `ballastMb`. */
const helperFloor = (file: string, concurrency: number, ballastMb: number, signal: AbortSignal) =>
  measureFloor(process.execPath, ['--import', 'tsx', here('./helper-floor.ts'), file, String(FLOOR_CALLS), String(concurrency), String(ballastMb)], signal);

/** posix_spawn from a small Python process: what a helper that only creates processes would pay. */
const posixSpawnFloor = (file: string, signal: AbortSignal) => measureFloor('/usr/bin/python3', [here('./posix-spawn.py'), file, String(FLOOR_CALLS)], signal);

/** ms between each line's printing (its own timestamp) and its arrival, over one call. */
async function lineDelays(url: string, signal: AbortSignal): Promise<number[]> {
  const response = await request(url, { signal: AbortSignal.any([signal, AbortSignal.timeout(10_000)]) });
  const delays: number[] = [];
  let pending = '';
  for await (const chunk of response.body) {
    const arrived = Date.now();
    pending += (chunk as Buffer).toString();
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      const match = /(\d{19})$/.exec(line.trim());
      if (match) delays.push(arrived - Number(BigInt(match[1]!) / 1_000_000n));
    }
  }
  return delays;
}

const summary = (runs: Load[]) => ({
  rps: median(runs.map((r) => r.rps)),
  p50: median(runs.map((r) => r.p50)),
  p99: median(runs.map((r) => r.p99)),
  cpuMsPerCall: median(runs.map((r) => r.cpuMsPerCall)),
  errors: runs.reduce((sum, r) => sum + r.errors, 0),
});

/** Prints every row side by side: calls/s and CPU per call at concurrency 1 and 8. */
function printTable(table: Map<string, Map<number, Floor>>): void {
  const cell = (figure: Floor | undefined) =>
    figure ? `${figure.perSecond.toFixed(0).padStart(7)} ${figure.cpuMsPerCall.toFixed(2).padStart(9)}` : `${'–'.padStart(7)} ${'–'.padStart(9)}`;
  const width = Math.max(...[...table.keys()].map((label) => label.length));
  console.log(
    `\nscripts, side by side (load average ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}):`,
  );
  console.log(`${''.padEnd(width)}   c=1 calls/s  CPU ms/call   c=8 calls/s  CPU ms/call`);
  for (const [label, figures] of table) console.log(`${label.padEnd(width)}   ${cell(figures.get(1))}     ${cell(figures.get(8))}`);
}

export async function run({ report, signal }: BenchContext): Promise<BenchResult[]> {
  if (!existsSync(WEBHOOK)) throw new Error(`${WEBHOOK} is missing: apt-get install webhook`);
  const dir = await mkdtemp(join(tmpdir(), 'offcloud-bench-scripts-'));
  const folder = join(dir, 'scripts');
  await mkdir(folder);
  for (const [name, text] of [
    ['hello.sh', TWO_LINES],
    ['stamps.sh', TIMESTAMPS],
  ] as const) {
    await writeFile(join(folder, name), text);
    await chmod(join(folder, name), 0o755);
  }
  const hello = join(folder, 'hello.sh');
  const failures: string[] = [];
  const results: BenchResult[] = [];
  const step = async (what: string, measure: () => Promise<BenchResult[]>) => {
    try {
      for (const figure of await measure()) {
        results.push(figure);
        report(figure);
      }
    } catch (err) {
      failures.push(`${what}: ${(err as Error).message}`);
      console.error(`scripts bench: ${what} failed: ${(err as Error).message}`);
    }
  };
  /** The closing table: per row, calls/s and CPU per call at each concurrency. */
  const table = new Map<string, Map<number, Floor>>();
  const row = (label: string, concurrency: number, figure: Floor) => table.set(label, (table.get(label) ?? new Map<number, Floor>()).set(concurrency, figure));
  const ours = await startChildServers<{ url: string; pid: number; rssMb: number }>(new URL('./server.ts', import.meta.url), [dir, folder]);
  const webhookPort = 20000 + Math.floor(Math.random() * 20000);
  let webhook: ChildProcess | null = null;
  try {
    webhook = await startWebhook(dir, webhookPort, { hello, stamps: join(folder, 'stamps.sh') });
    const webhookPid = webhook.pid!;
    const webhookBase = `http://127.0.0.1:${webhookPort}/hooks`;
    // One call each first: our spawn helper starts with the first run, which is not what is measured.
    for (const url of [ours.info.url, webhookBase]) await (await request(`${url}/hello?name=warm-up`)).body.dump();
    for (const connections of [1, 8]) {
      await step(`load at concurrency ${connections}`, async () => {
        const rounds = await alternate(
          ROUNDS,
          () => load(`${ours.info.url}/hello?name=bench`, connections, ours.info.pid, signal),
          () => load(`${webhookBase}/hello?name=bench`, connections, webhookPid, signal),
        );
        const a = summary(rounds.a);
        const b = summary(rounds.b);
        row('ours: server + spawn helper + script', connections, { perSecond: a.rps, cpuMsPerCall: a.cpuMsPerCall });
        row('Debian webhook 2.8.0 + script', connections, { perSecond: b.rps, cpuMsPerCall: b.cpuMsPerCall });
        const details = { ours: a, webhook: b, rounds, secondsPerRound: SECONDS, ourServerRssMb: ours.info.rssMb, loadAverage: loadavg() };
        return [
          result({
            name: `scripts two-line script calls/s, concurrency ${connections}`,
            unit: 'calls/s',
            ours: a.rps,
            baseline: 'Debian webhook 2.8.0',
            baselineValue: b.rps,
            better: 'higher',
            details,
          }),
          result({
            name: `scripts CPU per call (server, helper and script), concurrency ${connections}`,
            unit: 'ms CPU per call',
            ours: a.cpuMsPerCall,
            baseline: 'Debian webhook 2.8.0 (and the script)',
            baselineValue: b.cpuMsPerCall,
            better: 'lower',
          }),
        ];
      });
    }
    for (const concurrency of [1, 8]) {
      await step(`spawn floors at concurrency ${concurrency}`, async () => {
        const small = await nodeSpawnFloor(hello, concurrency, 0, signal);
        const ballastMb = Math.max(0, ours.info.rssMb - (small.rssMb ?? 0));
        const sized = await nodeSpawnFloor(hello, concurrency, ballastMb, signal);
        const helper = await helperFloor(hello, concurrency, ballastMb, signal);
        const posix = concurrency === 1 ? await posixSpawnFloor(hello, signal) : null;
        row(`floor: Node spawn from a process of our server's size (${ours.info.rssMb} MB)`, concurrency, sized);
        row("floor: Node spawn from a bare Node process (the helper's size, ~50 MB)", concurrency, small);
        row("floor: our spawn helper without HTTP (caller of our server's size)", concurrency, helper);
        if (posix) row('floor: posix_spawn from a small Python process', concurrency, posix);
        return [
          result({
            name: `scripts process creation: our spawn helper vs Node spawn in a process of our server's size, concurrency ${concurrency}`,
            unit: 'ms CPU per call',
            ours: helper.cpuMsPerCall,
            baseline: `Node spawn in a ${sized.rssMb} MB process`,
            baselineValue: sized.cpuMsPerCall,
            better: 'lower',
            details: { helper, nodeSpawnSized: sized, nodeSpawnSmall: small, ...(posix ? { posixSpawnSmallProcess: posix } : {}), loadAverage: loadavg() },
          }),
        ];
      });
    }
    await step('line delay', async () => {
      const delays = await alternate(
        ROUNDS,
        () => lineDelays(`${ours.info.url}/stamps`, signal),
        () => lineDelays(`${webhookBase}/stamps`, signal),
      );
      const ourDelays = delays.a.flat();
      const webhookDelays = delays.b.flat();
      return [
        result({
          name: 'scripts delay from a line printed to it reaching the client (median of 30 lines)',
          unit: 'ms',
          ours: median(ourDelays),
          baseline: 'Debian webhook 2.8.0 (buffers until exit)',
          baselineValue: median(webhookDelays),
          better: 'lower',
          details: { oursMax: Math.max(...ourDelays), webhookMax: Math.max(...webhookDelays), linesPerCall: 10, msBetweenLines: 50 },
        }),
      ];
    });
  } finally {
    if (webhook) {
      webhook.kill();
      if (webhook.exitCode === null) await once(webhook, 'exit');
    }
    await ours.stop();
    await rm(dir, { recursive: true, force: true });
  }
  printTable(table);
  if (failures.length) throw new Error(`${failures.length} step(s) failed:\n${failures.join('\n')}`);
  return results;
}
