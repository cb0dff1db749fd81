/**
 * A worker-thread client that sends one POST at a time for a few seconds and
 * reports each request's latency in milliseconds with sub-millisecond
 * resolution (autocannon's percentiles are whole milliseconds, too coarse for
 * a 10 ms request). The worker keeps writing and reading bodies off the
 * servers' event loop, as autocannon's worker does.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Client } from 'undici';

export interface SequentialLoad {
  url: string;
  body: Uint8Array;
  seconds: number;
}

export interface SequentialResult {
  latenciesMs: number[];
  errors: number;
}

const { url, body, seconds } = workerData as SequentialLoad;
const target = new URL(url);
const client = new Client(target.origin);
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
await client.close();
parentPort!.postMessage({ latenciesMs, errors } satisfies SequentialResult);
