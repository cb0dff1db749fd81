/**
 * Several proxy processes on one gateway (`--workers N`), the way nginx
 * runs worker processes: this process keeps the listening sockets, the
 * admin API and the `policy: local` rate-limit counters (like nginx's
 * shared memory zone), and hands each client connection to the next worker
 * in turn. Workers ask for counter decisions in batches, one message per
 * event-loop turn, so the check-and-increment stays atomic and exact across
 * processes. A worker that dies is replaced. The workers' counts of what
 * they answered come with their figures each second and are asked for
 * fresh when the admin API reads them.
 */
import type { ChildProcess } from 'node:child_process';
import { forkTypeScript } from '../../common/worker.ts';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { ConnectionCounters } from '../http/server.ts';
import type { Counter, CounterResult, CounterStore } from '../plugins/rate-limiting/policies.ts';
import { mergeTraffic, type Tally, type TrafficReport } from '../proxy/traffic.ts';
import type { ProxySettings, Scheme } from './service.ts';

/** What a worker needs to serve: the proxy's settings, the HTTPS port, and the document. */
export interface WorkerSettings {
  logLevel: string;
  proxy: ProxySettings;
  httpsPort: number | null;
  doc: unknown;
}

/** Messages from the listening process to a worker. */
export type ToWorker =
  | { type: 'start'; settings: WorkerSettings }
  | { type: 'config'; doc: unknown }
  | { type: 'connection'; scheme: Scheme }
  | { type: 'counted'; results: [number, CounterResult][] }
  | { type: 'traffic'; id: number }
  | { type: 'close' };

/** Messages from a worker. */
export type FromWorker =
  | { type: 'ready' }
  | { type: 'count'; batch: [number, Counter[]][] }
  | { type: 'stats'; counters: ConnectionCounters; tally: Tally }
  | { type: 'traffic'; id: number; report: TrafficReport }
  | { type: 'failed'; message: string };

const WORKER_ENTRY = new URL('./worker.ts', import.meta.url);
const STOP_GRACE_MS = 10_000;
/** How long a worker may take to send its traffic report before its last one is used. */
const TRAFFIC_WAIT_MS = 1000;
const NO_TALLY: Tally = { answers: [], rejections: [], series: [] };

interface Worker {
  child: ChildProcess;
  counters: ConnectionCounters;
  /** Its counts as last reported. */
  tally: Tally;
  ready: Promise<void>;
}

export class WorkerProcesses {
  private readonly workers: Worker[] = [];
  private next = 0;
  private closing = false;
  private settings: WorkerSettings;
  /** Totals of workers that have exited, so /status keeps counting them. */
  private readonly retired: ConnectionCounters = { accepted: 0, active: 0, inFlight: 0, total: 0 };
  private retiredTally: Tally = NO_TALLY;
  /** Traffic reports asked of the workers and not answered yet, by id. */
  private readonly asked = new Map<number, (report: TrafficReport) => void>();
  private lastAsk = 0;

  constructor(
    private readonly size: number,
    settings: WorkerSettings,
    private readonly counters: CounterStore,
    private readonly logger: Logger,
  ) {
    this.settings = settings;
  }

  /** Starts every worker; resolves once all of them serve. */
  async start(): Promise<void> {
    for (let i = 0; i < this.size; i++) this.workers.push(this.spawn());
    await Promise.all(this.workers.map((w) => w.ready));
  }

  private spawn(): Worker {
    const child = forkTypeScript(WORKER_ENTRY, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const worker: Worker = { child, counters: { accepted: 0, active: 0, inFlight: 0, total: 0 }, tally: NO_TALLY, ready: Promise.resolve() };
    worker.ready = new Promise<void>((resolve, reject) => {
      child.on('message', (message: FromWorker) => {
        switch (message.type) {
          case 'ready':
            return resolve();
          case 'failed':
            return reject(new Error(`gateway worker failed to start: ${message.message}`));
          case 'stats':
            worker.counters = message.counters;
            worker.tally = message.tally;
            return;
          case 'traffic':
            worker.tally = message.report.tally;
            return this.asked.get(message.id)?.(message.report);
          case 'count':
            return this.decide(child, message.batch);
        }
      });
      child.once('exit', (code, signal) => {
        reject(new Error(`gateway worker exited during start-up (${signal ?? code})`));
        this.exited(worker, code, signal);
      });
    });
    send(child, { type: 'start', settings: this.settings });
    return worker;
  }

  /** Decides a batch of counter checks, in order, each atomic. */
  private decide(child: ChildProcess, batch: [number, Counter[]][]): void {
    const results: [number, CounterResult][] = [];
    for (const [id, counters] of batch) results.push([id, this.counters.checkAndIncrement(counters) as CounterResult]);
    send(child, { type: 'counted', results });
  }

  private exited(worker: Worker, code: number | null, signal: NodeJS.Signals | null): void {
    const at = this.workers.indexOf(worker);
    if (at < 0) return;
    this.retired.accepted += worker.counters.accepted;
    this.retired.total += worker.counters.total;
    this.retiredTally = mergeTraffic([tallyOnly(this.retiredTally), tallyOnly(worker.tally)]).tally;
    worker.tally = NO_TALLY;
    if (this.closing) {
      this.workers.splice(at, 1);
      return;
    }
    this.logger.error({ pid: worker.child.pid, code, signal }, 'gateway worker exited; starting another');
    this.workers[at] = this.spawn();
    this.workers[at].ready.catch((err: unknown) => this.logger.error({ err }, 'gateway worker replacement failed'));
  }

  /** Hands a client connection to the next worker (the socket is paused: no byte was read here). */
  dispatch(socket: Socket, scheme: Scheme): void {
    // Round robin over the workers, skipping one that is being replaced.
    for (let tried = 0; !this.closing && tried < this.workers.length; tried++) {
      const worker = this.workers[this.next++ % this.workers.length]!;
      if (!worker.child.connected) continue;
      worker.child.send({ type: 'connection', scheme } satisfies ToWorker, socket, (err) => {
        if (err) socket.destroy();
      });
      return;
    }
    socket.destroy();
  }

  /** A new configuration for every worker (already validated here). */
  reload(doc: unknown): void {
    this.settings = { ...this.settings, doc };
    for (const worker of this.workers) send(worker.child, { type: 'config', doc });
  }

  /** The workers' connection figures as last reported (at most a second old). */
  stats(): ConnectionCounters {
    const sum = { ...this.retired, active: 0, inFlight: 0 };
    for (const { counters } of this.workers) {
      sum.accepted += counters.accepted;
      sum.active += counters.active;
      sum.inFlight += counters.inFlight;
      sum.total += counters.total;
    }
    return sum;
  }

  /** Every worker's counts and last requests, asked now (a worker that does not answer in time counts as last reported), and those of workers that exited. */
  async traffic(): Promise<TrafficReport> {
    const reports = await Promise.all(this.workers.map((worker) => this.askTraffic(worker)));
    return mergeTraffic([tallyOnly(this.retiredTally), ...reports]);
  }

  private askTraffic(worker: Worker): Promise<TrafficReport> {
    if (!worker.child.connected) return Promise.resolve(tallyOnly(worker.tally));
    const id = ++this.lastAsk;
    return new Promise((resolve) => {
      const answered = (report: TrafficReport) => {
        clearTimeout(timer);
        this.asked.delete(id);
        resolve(report);
      };
      const timer = setTimeout(() => answered(tallyOnly(worker.tally)), TRAFFIC_WAIT_MS);
      this.asked.set(id, answered);
      send(worker.child, { type: 'traffic', id });
    });
  }

  pids(): number[] {
    return this.workers.map((w) => w.child.pid!).filter(Boolean);
  }

  /** Each worker finishes its requests in flight and exits. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(
      this.workers.map(({ child }) => {
        if (child.exitCode !== null || child.signalCode !== null) return undefined;
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        send(child, { type: 'close' });
        const kill = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
        return exited.finally(() => clearTimeout(kill));
      }),
    );
  }
}

function tallyOnly(tally: Tally): TrafficReport {
  return { tally, recent: [] };
}

function send(child: ChildProcess, message: ToWorker): void {
  if (child.connected) child.send(message);
}
