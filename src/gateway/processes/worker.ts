/**
 * A gateway worker process (worker-processes.ts starts it): serves the client
 * connections the listening process hands over, with its own upstream
 * pools and Redis connections, and asks the listening process for
 * `policy: local` rate-limit decisions.
 */
import type { Socket } from 'node:net';
import { createLogger } from '../../common/log.ts';
import { CounterStores, type Counter, type CounterResult, type CounterStore } from '../plugins/rate-limiting/policies.ts';
import { pluginEnvironment } from '../plugins/types.ts';
import { compileConfig, type LoadedConfig } from '../proxy/compile.ts';
import type { FromWorker, ToWorker, WorkerSettings } from './worker-processes.ts';
import { ProxyService } from './service.ts';

const STATS_INTERVAL_MS = 1000;

function tell(message: FromWorker): void {
  if (process.connected) process.send!(message);
}

/**
 * The listening process's counters, asked in one message per event-loop
 * turn for every request that needs a decision in it.
 */
class ListenerCounters implements CounterStore {
  private batch: [number, Counter[]][] = [];
  private readonly waiting = new Map<number, (result: CounterResult) => void>();
  private nextId = 0;

  checkAndIncrement(counters: Counter[]): Promise<CounterResult> {
    return new Promise((resolve) => {
      const id = ++this.nextId;
      this.waiting.set(id, resolve);
      if (this.batch.push([id, counters]) === 1) setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    tell({ type: 'count', batch: this.batch });
    this.batch = [];
  }

  answered(results: [number, CounterResult][]): void {
    for (const [id, result] of results) {
      this.waiting.get(id)?.(result);
      this.waiting.delete(id);
    }
  }
}

function serve(settings: WorkerSettings): { service: ProxyService; counted: ListenerCounters; reload(doc: unknown): void; close(): Promise<void> } {
  const logger = createLogger(settings.logLevel, 'gateway');
  const counted = new ListenerCounters();
  const counters = new CounterStores(logger, counted);
  const env = pluginEnvironment(logger, counters);
  let config: LoadedConfig = compileConfig(settings.doc, env);
  const service = new ProxyService({ ...settings.proxy, config: () => config, httpsPort: () => settings.httpsPort, logger, series: env.series });
  const report = setInterval(() => tell({ type: 'stats', counters: service.counters(), tally: service.traffic.tally() }), STATS_INTERVAL_MS);
  report.unref();
  return {
    service,
    counted,
    reload(doc) {
      config = compileConfig(doc, env);
    },
    async close() {
      clearInterval(report);
      await service.close();
      await counters.close();
    },
  };
}

let running: ReturnType<typeof serve> | null = null;

process.on('message', (message: ToWorker, handle?: Socket) => {
  switch (message.type) {
    case 'start':
      try {
        running = serve(message.settings);
        tell({ type: 'ready' });
      } catch (err) {
        tell({ type: 'failed', message: (err as Error).message });
        process.exit(1);
      }
      return;
    case 'connection':
      if (handle) running?.service.accept(handle, message.scheme);
      return;
    case 'counted':
      running?.counted.answered(message.results);
      return;
    case 'config':
      running?.reload(message.doc);
      return;
    case 'traffic':
      if (running) tell({ type: 'traffic', id: message.id, report: running.service.traffic.report() });
      return;
    case 'close':
      process.disconnect();
      return;
  }
});

// Asked to stop, or the listening process is gone: finish what is in flight, then exit.
process.on('disconnect', () => {
  void (running?.close() ?? Promise.resolve()).finally(() => process.exit(0));
});
