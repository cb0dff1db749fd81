/**
 * A worker-thread client that sends one POST at a time and reports each
 * request's latency in milliseconds with sub-millisecond resolution
 * (autocannon's percentiles are whole milliseconds, too coarse for a 10 ms
 * request). It stays up between rounds: each message asks for one round of
 * `seconds` against `url`. It keeps writing and reading bodies off the
 * servers' event loop, as autocannon's worker does.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Client } from 'undici';

export interface SequentialRound {
  url: string;
  seconds: number;
}

export interface SequentialResult {
  latenciesMs: number[];
  errors: number;
}

const body = workerData as Uint8Array;
const clients = new Map<string, Client>();

async function round({ url, seconds }: SequentialRound): Promise<SequentialResult> {
  const target = new URL(url);
  let client = clients.get(target.origin);
  if (!client) clients.set(target.origin, (client = new Client(target.origin)));
  const latenciesMs: number[] = [];
  let errors = 0;
  const until = performance.now() + seconds * 1000;
  while (performance.now() < until) {
    const started = performance.now();
    const response = await client.request({ path: target.pathname, method: 'POST', body, headers: { 'content-type': 'application/json' } });
    await response.body.arrayBuffer();
    latenciesMs.push(performance.now() - started);
    if (response.statusCode !== 200) errors++;
  }
  return { latenciesMs, errors };
}

parentPort!.on('message', (message: SequentialRound | 'close') => {
  if (message === 'close') {
    void Promise.all([...clients.values()].map((c) => c.close())).then(() => process.exit(0));
    return;
  }
  void round(message).then((result) => parentPort!.postMessage(result));
});
