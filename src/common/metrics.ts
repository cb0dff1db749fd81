/**
 * Prometheus metrics, one registry per running component (no process-wide
 * default registry: `offcloud up` runs many components in one process, and
 * each serves only its own figures). Every HTTP component gets request
 * counts by route and status, a latency histogram and its open connections
 * from createHttpServer; components add their own counters through
 * `counter()`, `gauge()` and `histogram()`. Names carry the `offcloud_` prefix.
 */
import type { Server } from 'node:net';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Buckets for request latency in seconds: 0.5 ms to 10 s. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class ComponentMetrics {
  readonly registry = new Registry();

  constructor(readonly component: string) {
    this.registry.setDefaultLabels({ component });
    // The process's own figures, read when scraped. prom-client's default
    // collectors are not used: each call adds observers that live as long as
    // the process, and tests start hundreds of servers in one process.
    this.gauge('process_resident_memory_bytes', 'resident memory of the process', [], (gauge) => gauge.set(process.memoryUsage().rss));
    this.gauge('process_cpu_seconds_total', 'user and system CPU time of the process', [], (gauge) => {
      const { user, system } = process.cpuUsage();
      gauge.set((user + system) / 1e6);
    });
  }

  /** `collect`, when given, sets the counter when scraped (from counts kept elsewhere: reset, then inc by each count). */
  counter<L extends string>(name: string, help: string, labelNames: readonly L[] = [], collect?: (counter: Counter<L>) => void | Promise<void>): Counter<L> {
    return new Counter({ name: `offcloud_${name}`, help, labelNames, registers: [this.registry], ...collectOption(collect) });
  }

  gauge<L extends string>(name: string, help: string, labelNames: readonly L[] = [], collect?: (gauge: Gauge<L>) => void | Promise<void>): Gauge<L> {
    return new Gauge({ name: `offcloud_${name}`, help, labelNames, registers: [this.registry], ...collectOption(collect) });
  }

  histogram<L extends string>(name: string, help: string, labelNames: readonly L[] = [], buckets = LATENCY_BUCKETS): Histogram<L> {
    return new Histogram({ name: `offcloud_${name}`, help, labelNames, buckets, registers: [this.registry] });
  }

  private readonly listeners = new Set<Server>();
  private requestMetrics: HttpMetrics | null = null;

  /** Request counts and latency, shared by every HTTP server of the component (identity has two). */
  http(): HttpMetrics {
    return (this.requestMetrics ??= new HttpMetrics(this));
  }

  /** Counts a listening server's connections in `open_connections`, read when scraped. */
  watchConnections(server: Server): void {
    if (this.listeners.size === 0) {
      this.gauge('open_connections', "connections open now, over all of the component's listeners", [], async (gauge) => {
        const counts = await Promise.all(
          [...this.listeners].map((listener) => new Promise<number>((done) => listener.getConnections((err, count) => done(err ? 0 : count)))),
        );
        gauge.set(counts.reduce((a, b) => a + b, 0));
      });
    }
    this.listeners.add(server);
  }

  private readonly appended: (() => Promise<string>)[] = [];

  /**
   * Metrics the component renders itself after its own, for names that are
   * not offcloud's (the gateway's Kong-compatible `kong_*`, which carry no
   * prefix and no component label, as Kong's Prometheus plugin names them).
   */
  append(render: () => Promise<string>): void {
    this.appended.push(render);
  }

  /** The text exposition format, as GET /metrics answers it. */
  async render(): Promise<{ contentType: string; body: string }> {
    const extra = await Promise.all(this.appended.map((render) => render()));
    return { contentType: this.registry.contentType, body: (await this.registry.metrics()) + extra.join('') };
  }
}

/** prom-client's `collect` option, calling `collect` with the metric. */
function collectOption<M>(collect: ((metric: M) => void | Promise<void>) | undefined) {
  if (!collect) return {};
  return {
    async collect(this: M) {
      await collect(this);
    },
  };
}

/** Request counts and latency by route (the route's pattern, not the URL, so ids do not explode the label set). */
export class HttpMetrics {
  private readonly requests: Counter<'method' | 'route' | 'status'>;
  private readonly latency: Histogram<'method' | 'route'>;

  constructor(metrics: ComponentMetrics) {
    this.requests = metrics.counter('http_requests_total', 'HTTP requests answered, by route and status', ['method', 'route', 'status']);
    this.latency = metrics.histogram('http_request_duration_seconds', 'time from request to the end of the answer', ['method', 'route']);
  }

  observe(method: string, route: string | undefined, status: number, seconds: number): void {
    const labels = { method, route: route ?? 'unmatched' };
    this.requests.inc({ ...labels, status: String(status) });
    this.latency.observe(labels, seconds);
  }
}
