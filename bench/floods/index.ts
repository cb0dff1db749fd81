/**
 * Floods (requests, connections and messages sent faster than they can be served): `npm run bench -- floods`. One `offcloud up`,
 * and for every listener in its table, in turn: 1,000 connect-and-close
 * connections (50 at a time), every HTTP shape of a client that vanishes
 * mid-request (×40) or 200 silent connections on the other protocols, and 50
 * connections that send 64 KiB of random bytes. Meanwhile a well-behaved
 * client asks the component's /health (or, for MQTT and gRPC, opens a
 * connection) every 50 ms. Printed per listener: probes failed, the
 * descriptors and RSS of up's process tree before the flood and 3 s after the
 * flood's clients are gone, and whether the process is still there.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as connectTcp } from 'node:net';
import { Agent, request } from 'undici';
import { descendants, rawConnection, startUp, terminate, vanishingClient, vanishingHttp, type Listener } from '../../test/resilience/harness.ts';
import { sized } from '../common/quick.ts';
import { result, type BenchContext, type BenchResult } from '../common/result.ts';

const CONNECTS = sized(1000, 50);
const AT_ONCE = 50;
const SETTLE_MS = sized(3000, 200);
/** Per flood: HTTP clients vanishing mid-request of each shape, silent connections, connections of random bytes. */
const VANISHING_HTTP = sized(40, 2);
const SILENT = sized(200, 10);
const RANDOM_BYTES = sized(50, 5);
/** How long the vanishing clients stay before they go. */
const VANISH_AFTER_MS = sized(2000, 200);

interface Footprint {
  fds: number;
  rssMb: number;
}

/** Descriptors and resident memory of up's process and every process under it. */
function footprint(pid: number): Footprint {
  let fds = 0;
  let rssKb = 0;
  for (const member of [pid, ...descendants(pid).map((p) => p.pid)]) {
    try {
      fds += readdirSync(`/proc/${member}/fd`).length;
      const status = readFileSync(`/proc/${member}/status`, 'utf8');
      rssKb += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    } catch {
      // ended meanwhile
    }
  }
  return { fds, rssMb: Math.round(rssKb / 1024) };
}

const isHttp = (url: URL) => url.protocol === 'http:' || url.protocol === 'https:';

async function inBatches(count: number, work: (i: number) => Promise<void>): Promise<void> {
  for (let i = 0; i < count; i += AT_ONCE) {
    await Promise.all(Array.from({ length: Math.min(AT_ONCE, count - i) }, (_, j) => work(i + j).catch(() => undefined)));
  }
}

/** A well-behaved client: an HTTP answer of any status, or for other protocols a TCP connection accepted. */
async function probe(url: URL, agent: Agent): Promise<boolean> {
  try {
    if (isHttp(url)) {
      const answer = await request(`${url.protocol}//${url.host}/health`, { dispatcher: agent, headersTimeout: 5000, bodyTimeout: 5000 });
      await answer.body.dump();
      return true;
    }
    const socket = await rawConnection(url);
    socket.destroy();
    return true;
  } catch {
    return false;
  }
}

async function flood(url: URL): Promise<number> {
  let sent = 0;
  await inBatches(CONNECTS, async () => {
    const socket = connectTcp(Number(url.port), '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve).once('error', resolve));
    socket.end();
    sent++;
  });
  const vanishing = isHttp(url)
    ? Array.from({ length: VANISHING_HTTP }, () => vanishingHttp(url)).flat()
    : Array.from({ length: SILENT }, () => vanishingClient(url, '', 0, 'silent'));
  sent += vanishing.length;
  await new Promise((resolve) => setTimeout(resolve, VANISH_AFTER_MS));
  for (const v of vanishing) v.socket.destroy();
  await inBatches(RANDOM_BYTES, async () => {
    const socket = await rawConnection(url);
    socket.write(randomBytes(64 * 1024));
    await new Promise((resolve) => setTimeout(resolve, 200));
    socket.destroy();
    sent++;
  });
  return sent;
}

/** The first HTTP listener and the first other one. */
function firstOfEachKind(listeners: Listener[]): Listener[] {
  return [listeners.find((l) => isHttp(l.url)), listeners.find((l) => !isHttp(l.url))].filter((l): l is Listener => l !== undefined);
}

export async function run({ report, signal }: BenchContext): Promise<BenchResult[]> {
  const dataDir = await mkdtemp(join(tmpdir(), 'offcloud-floods-'));
  const up = await startUp(dataDir);
  const pid = up.process.pid!;
  const agent = new Agent({ connect: { ca: await readFile(join(dataDir, 'ca', 'ca.crt'), 'utf8') } });
  const rows: string[] = [];
  let worstFdGrowth = 0;
  let probesFailed = 0;
  let probesSent = 0;
  try {
    const start = footprint(pid);
    console.log(
      `floods: load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; up's process tree ${start.fds} fds, ${start.rssMb} MB RSS`,
    );
    // The smoke run floods one listener of each kind: one HTTP, one not.
    for (const listener of sized(up.listeners as Listener[], firstOfEachKind(up.listeners as Listener[]))) {
      if (signal.aborted) break;
      const before = footprint(pid);
      let failed = 0;
      let probes = 0;
      let flooding = true;
      const prober = (async () => {
        while (flooding) {
          probes++;
          if (!(await probe(listener.url, agent))) failed++;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      })();
      const sent = await flood(listener.url);
      flooding = false;
      await prober;
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
      const after = footprint(pid);
      const alive = up.process.exitCode === null && (await probe(listener.url, agent));
      probesFailed += failed;
      probesSent += probes;
      worstFdGrowth = Math.max(worstFdGrowth, after.fds - before.fds);
      const row = `${listener.component.padEnd(17)} ${listener.label.slice(0, 34).padEnd(34)} ${String(sent).padStart(5)} conns  probes ${failed}/${probes} failed  fds ${before.fds} → ${after.fds}  RSS ${before.rssMb} → ${after.rssMb} MB  ${alive ? 'serving' : 'NOT SERVING'}`;
      console.log(row);
      rows.push(row);
    }
    const end = footprint(pid);
    const figure = result({
      name: 'floods: descriptors of up after every listener was flooded, vs before',
      unit: 'fds',
      ours: end.fds,
      baseline: 'descriptors before the floods',
      baselineValue: start.fds,
      better: 'lower',
      details: { rssStartMb: start.rssMb, rssEndMb: end.rssMb, worstFdGrowth, probesFailed, probesSent, listeners: rows.length },
    });
    report(figure);
    return [figure];
  } finally {
    await terminate(up.process, 10_000);
    await agent.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}
