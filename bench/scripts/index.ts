/**
 * Script-trigger server against Debian's `webhook` serving the same two-line
 * script in the same run: calls/s with p50/p99 at concurrency 1 and 8
 * (autocannon, alternating rounds), and the delay from a line being printed
 * to it reaching the client (webhook answers only when the script ends).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { request } from 'undici';
import { startScripts } from '../../src/scripts/server.ts';
import { alternate, median } from '../common/load.ts';
import { result, type BenchResult } from '../common/result.ts';

const WEBHOOK = '/usr/bin/webhook';
const SECONDS = 4;
const ROUNDS = 3;
const TWO_LINES = '#!/bin/sh\necho "hello $PARAM_NAME"\necho "second line"\n';
const TIMESTAMPS = '#!/bin/sh\nfor i in 1 2 3 4 5 6 7 8 9 10; do date +%s%N; sleep 0.05; done\n';

interface Load {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function load(url: string, connections: number): Promise<Load> {
  const out = await autocannon({ url, connections, duration: SECONDS });
  return { rps: out.requests.average, p50: out.latency.p50, p99: out.latency.p99, errors: out.errors + out.non2xx };
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
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`webhook did not start: ${(err as Error).message}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** Sequential bare `child_process.spawn` of the script, reading its output: the floor any Node server pays. */
async function spawnFloor(file: string, calls = 100): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < calls; i++) {
    await new Promise((resolve) => {
      const child = spawn(file, [], { stdio: ['ignore', 'pipe', 'ignore'] });
      child.stdout!.resume();
      child.once('close', resolve);
    });
  }
  return (calls * 1000) / (performance.now() - started);
}

/** ms between each line's printing (its own timestamp) and its arrival, over one call. */
async function lineDelays(url: string): Promise<number[]> {
  const response = await request(url);
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

export async function run(): Promise<BenchResult[]> {
  if (!existsSync(WEBHOOK)) throw new Error(`${WEBHOOK} is missing: apt-get install webhook`);
  const dir = await mkdtemp(join(tmpdir(), 'offcloud-bench-scripts-'));
  const folder = join(dir, 'scripts');
  await mkdir(folder);
  for (const [name, text] of [['hello.sh', TWO_LINES], ['stamps.sh', TIMESTAMPS]] as const) {
    await writeFile(join(folder, name), text);
    await chmod(join(folder, name), 0o755);
  }
  const ours = await startScripts({ port: 0, logLevel: 'silent', dataDir: dir, scriptsDir: folder, maxRunning: 64 });
  const ourBase = ours.urls[0]!.url.replace(/\/$/, '');
  const webhookPort = 20000 + Math.floor(Math.random() * 20000);
  const webhook = await startWebhook(dir, webhookPort, { hello: join(folder, 'hello.sh'), stamps: join(folder, 'stamps.sh') });
  const webhookBase = `http://127.0.0.1:${webhookPort}/hooks`;
  try {
    const results: BenchResult[] = [];
    for (const connections of [1, 8]) {
      const rounds = await alternate(
        ROUNDS,
        () => load(`${ourBase}/hello?name=bench`, connections),
        () => load(`${webhookBase}/hello?name=bench`, connections),
      );
      const summary = (runs: Load[]) => ({ rps: median(runs.map((r) => r.rps)), p50: median(runs.map((r) => r.p50)), p99: median(runs.map((r) => r.p99)) });
      const a = summary(rounds.a);
      const b = summary(rounds.b);
      results.push(
        result({
          name: `scripts two-line script calls/s, concurrency ${connections}`,
          unit: 'calls/s',
          ours: a.rps,
          baseline: 'Debian webhook 2.8.0',
          baselineValue: b.rps,
          better: 'higher',
          details: {
            ours: a,
            webhook: b,
            rounds,
            secondsPerRound: SECONDS,
            ...(connections === 1 ? { bareNodeSpawnPerSecond: await spawnFloor(join(folder, 'hello.sh')), loadAverage: loadavg() } : {}),
          },
        }),
      );
    }
    const delays = await alternate(3, () => lineDelays(`${ourBase}/stamps`), () => lineDelays(`${webhookBase}/stamps`));
    const flat = (runs: number[][]) => runs.flat();
    results.push(
      result({
        name: 'scripts delay from a line printed to it reaching the client (median of 30 lines)',
        unit: 'ms',
        ours: median(flat(delays.a)),
        baseline: 'Debian webhook 2.8.0 (buffers until exit)',
        baselineValue: median(flat(delays.b)),
        better: 'lower',
        details: { oursMax: Math.max(...flat(delays.a)), webhookMax: Math.max(...flat(delays.b)), linesPerCall: 10, msBetweenLines: 50 },
      }),
    );
    return results;
  } finally {
    webhook.kill();
    await ours.close();
    await rm(dir, { recursive: true, force: true });
  }
}
