/**
 * GET /data/<device> through the whole path (HTTP → registry cache → gRPC
 * DevSvc.Get) against a direct gRPC Get loop on the same replicas, in
 * alternating rounds, with 1 and then 2 DevSvc replicas. Every server runs in
 * its own process; the load (autocannon, and the gRPC loop) runs here.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { Metadata } from '@grpc/grpc-js';
import { request } from 'undici';
import { devSvcClient } from '../../src/devices/proto.ts';
import { startChildServers, type ChildServers } from '../common/child.ts';
import { cpuWithEndedChildren } from '../common/cpu.ts';
import { alternate, median } from '../common/load.ts';
import { sized } from '../common/quick.ts';
import { result, type BenchResult } from '../common/result.ts';

const CONNECTIONS = 10;
const SECONDS = sized(3, 1);
const ROUNDS = sized(3, 1);
const DEVICE = 'sensor-1';

interface Figures {
  rps: number;
  p50ms: number;
  p99ms: number;
  errors: number;
  /** CPU ms per request of each process on the path, over the round. */
  cpu: Record<string, number>;
}

/** The processes whose CPU a round counts: this one (the load generator), the data service, the replicas. */
interface Processes {
  devdata: number;
  replicas: number[];
}

/** Runs a round and adds each process's CPU per request to its figures. */
async function withCpu(processes: Processes, path: 'data' | 'grpc', round: () => Promise<Omit<Figures, 'cpu'>>): Promise<Figures> {
  const pids: Record<string, number | 'self'> = { loader: 'self', ...(path === 'data' ? { devdata: processes.devdata } : {}) };
  processes.replicas.forEach((pid, i) => (pids[`devsvc${i + 1}`] = pid));
  const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuWithEndedChildren(pid)]));
  const figures = await round();
  const requests = figures.rps * SECONDS;
  const cpu = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, (cpuWithEndedChildren(pid) - before[name]!) / requests]));
  cpu.total = Object.values(cpu).reduce((a, b) => a + b, 0);
  return { ...figures, cpu };
}

async function dataLoad(base: string): Promise<Omit<Figures, 'cpu'>> {
  const r = await autocannon({ url: `${base}/data/${DEVICE}`, connections: CONNECTIONS, duration: SECONDS });
  return { rps: r.requests.average, p50ms: r.latency.p50, p99ms: r.latency.p99, errors: r.errors + r.non2xx };
}

/** CONNECTIONS callers, each calling Get back to back, round-robin over the replicas. */
async function grpcLoad(addresses: string[]): Promise<Omit<Figures, 'cpu'>> {
  const clients = addresses.map(devSvcClient);
  const latencies: number[] = [];
  let errors = 0;
  let next = 0;
  const until = Date.now() + SECONDS * 1000;
  const caller = async () => {
    while (Date.now() < until) {
      const client = clients[next++ % clients.length]!;
      const started = process.hrtime.bigint();
      await new Promise<void>((resolve) =>
        client.Get({ name: DEVICE }, new Metadata(), { deadline: Date.now() + 2000 }, (err) => {
          if (err) errors++;
          resolve();
        }),
      );
      latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, caller));
  for (const client of clients) client.close();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { rps: latencies.length / SECONDS, p50ms: at(0.5), p99ms: at(0.99), errors };
}

/** Waits until the data service has answered from every replica (the registry cache holds them all). */
async function servedByAll(base: string, replicas: number): Promise<void> {
  const seen = new Set<string>();
  const until = Date.now() + 15_000;
  while (seen.size < replicas) {
    if (Date.now() > until) throw new Error(`the data service found ${seen.size} of ${replicas} replicas`);
    const response = await request(`${base}/data/${DEVICE}`);
    await response.body.text();
    if (response.headers['x-devsvc-node']) seen.add(String(response.headers['x-devsvc-node']));
  }
}

async function measure(base: string, addresses: string[], processes: Processes): Promise<BenchResult> {
  await servedByAll(base, addresses.length);
  const rounds = await alternate(
    ROUNDS,
    () => withCpu(processes, 'data', () => dataLoad(base)),
    () => withCpu(processes, 'grpc', () => grpcLoad(addresses)),
  );
  const pick = (list: Figures[], key: 'rps' | 'p50ms' | 'p99ms') => median(list.map((f) => f[key]));
  const cpuOf = (list: Figures[]) =>
    Object.fromEntries(Object.keys(list[0]!.cpu).map((name) => [name, Number(median(list.map((f) => f.cpu[name]!)).toFixed(3))]));
  const ourCpu = cpuOf(rounds.a);
  const grpcCpu = cpuOf(rounds.b);
  return result({
    name: `devices GET /data/<device> req/s, ${addresses.length} DevSvc replica${addresses.length > 1 ? 's' : ''} (CPU ms per request: ours ${ourCpu.total}, direct ${grpcCpu.total}; load average ${loadavg()[0]!.toFixed(1)})`,
    unit: 'req/s',
    ours: pick(rounds.a, 'rps'),
    baseline: 'direct gRPC DevSvc.Get loop on the same replicas',
    baselineValue: pick(rounds.b, 'rps'),
    better: 'higher',
    details: {
      data: { p50ms: pick(rounds.a, 'p50ms'), p99ms: pick(rounds.a, 'p99ms'), errors: rounds.a.map((f) => f.errors), cpuMsPerRequest: ourCpu },
      grpc: { p50ms: pick(rounds.b, 'p50ms'), p99ms: pick(rounds.b, 'p99ms'), errors: rounds.b.map((f) => f.errors), cpuMsPerRequest: grpcCpu },
      rounds,
      connections: CONNECTIONS,
      secondsPerRound: SECONDS,
      registry: 'mdns',
      loadAverage: loadavg()
        .map((l) => l.toFixed(2))
        .join(' '),
    },
  });
}

export async function run(): Promise<BenchResult[]> {
  const dataDir = await mkdtemp(join(tmpdir(), 'offcloud-bench-devices-'));
  // The child processes read these: one data dir and a service name no one else on the machine uses.
  process.env.BENCH_DEVICES_DATA = dataDir;
  process.env.BENCH_DEVICES_SERVICE = `devsvc-bench-${process.pid}`;
  const children: ChildServers<unknown>[] = [];
  try {
    const first = await startChildServers<{ address: string; registry: string; pid: number }>(new URL('./replica.ts', import.meta.url));
    children.push(first);
    if (first.info.registry !== 'mdns') throw new Error('multicast DNS is not available here; the benchmark needs it');
    const devdata = await startChildServers<{ url: string; pid: number }>(new URL('./devdata.ts', import.meta.url));
    children.push(devdata);
    const one = await measure(devdata.info.url, [first.info.address], { devdata: devdata.info.pid, replicas: [first.info.pid] });
    const second = await startChildServers<{ address: string; pid: number }>(new URL('./replica.ts', import.meta.url));
    children.push(second);
    const two = await measure(devdata.info.url, [first.info.address, second.info.address], {
      devdata: devdata.info.pid,
      replicas: [first.info.pid, second.info.pid],
    });
    return [one, two];
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await rm(dataDir, { recursive: true, force: true });
  }
}
