import autocannon from 'autocannon';

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST';
  body?: string | Buffer;
  headers?: Record<string, string>;
  connections?: number;
  seconds?: number;
}

/** Requests per second over a short autocannon run; non-2xx answers count as errors. */
export async function requestsPerSecond(options: LoadOptions): Promise<{ rps: number; errors: number; p99ms: number }> {
  const result = await autocannon({
    url: options.url,
    method: options.method ?? 'GET',
    body: options.body,
    headers: options.headers,
    connections: options.connections ?? 10,
    duration: options.seconds ?? 5,
  });
  return { rps: result.requests.average, errors: result.errors + result.non2xx, p99ms: result.latency.p99 };
}

/** Runs a and b alternately, `rounds` times each, so drift on a shared machine hits both. */
export async function alternate<T>(rounds: number, a: () => Promise<T>, b: () => Promise<T>): Promise<{ a: T[]; b: T[] }> {
  const out = { a: [] as T[], b: [] as T[] };
  for (let i = 0; i < rounds; i++) {
    out.a.push(await a());
    out.b.push(await b());
  }
  return out;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
}
