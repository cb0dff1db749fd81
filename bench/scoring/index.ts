/**
 * Where a scoring request's time goes, in one run on one machine:
 *  (a) session.run alone on a prepared tensor (ONNX Runtime, same options),
 *  (b) JSON.parse alone of the same ~0.7 MB request body,
 *  (c) POST /score end to end through our container (single-pass body reader),
 *  (d) a naive server: fastify's stock JSON body parsing, nested arrays
 *      flattened into a Float32Array, the same session and softmax.
 * Each at concurrency 1 and 4: per-request time and requests/s. Targets:
 * (c) ≤ (a)+(b) per request (medians), and (c) ≥ 2× (d) in throughput.
 * Per-request times of (c) and (d) come from a client sending one request at
 * a time (sub-millisecond latencies); requests/s from autocannon. Both
 * clients run in worker threads, off the servers' event loop. The per-request
 * samples of (a), (b), the reader, (c) and (d) are taken in interleaved
 * rounds, so that this shared machine's drift (its speed varies up to 2×
 * from one minute to the next) hits all of them alike.
 */
import { once } from 'node:events';
import { availableParallelism } from 'node:os';
import Fastify from 'fastify';
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';
import { startScoring } from '../../src/scoring/server.ts';
import { normalizeInput, readerPixelTransform, serverSessionOptions, softmax } from '../../src/scoring/classifier.ts';
import { imageToPixels, scoreRequestBody } from '../../src/scoring/client.ts';
import { DEFAULT_MODEL } from '../../src/models/catalogue.ts';
import { INPUT_LAYOUT, INPUT_SHAPE, readTensorBody, TensorBodyStream } from '../../src/scoring/tensor-body.ts';
import { resolveModelFile } from '../../src/common/models.ts';
import { startTypeScriptWorker } from '../../src/common/worker.ts';
import type { SequentialResult, SequentialRound } from './sequential-client.ts';
import autocannon from 'autocannon';
import { median } from '../common/load.ts';
import { sized } from '../common/quick.ts';
import { result, type BenchResult } from '../common/result.ts';

const SECONDS = sized(5, 1);
/** Interleaved rounds of per-request samples, and the seconds of one-at-a-time requests per server per round. */
const ROUNDS = sized(8, 1);
const ROUND_SECONDS = 1;
const MEAN = [0.485, 0.456, 0.406];
const STD = [0.229, 0.224, 0.225];
const THREADS = availableParallelism();

/** Per-call milliseconds of a synchronous step: one sample per timed batch of `perBatch` calls. */
function timeSync(batches: number, perBatch: number, step: () => void): number[] {
  const samples: number[] = [];
  for (let r = 0; r < batches; r++) {
    const started = performance.now();
    for (let i = 0; i < perBatch; i++) step();
    samples.push((performance.now() - started) / perBatch);
  }
  return samples;
}

/** Requests/s of an async step run by `concurrency` loops for `seconds`. */
async function loopRate(concurrency: number, seconds: number, step: () => Promise<unknown>): Promise<number> {
  const until = performance.now() + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        await step();
        done++;
      }
    }),
  );
  return done / seconds;
}

/**
 * Requests/s under autocannon, its client in a worker thread so that writing the
 * 0.55 MB bodies and reading the answers does not share the servers' event loop.
 */
async function clientLoad(url: string, body: string, connections: number): Promise<{ rps: number; errors: number; p50ms: number; p99ms: number }> {
  const outcome = await autocannon({ url, method: 'POST', body, headers: { 'content-type': 'application/json' }, connections, duration: SECONDS, workers: 1 });
  return { rps: outcome.requests.average, errors: outcome.errors + outcome.non2xx, p50ms: outcome.latency.p50, p99ms: outcome.latency.p99 };
}

/** A client in a worker thread that sends one request at a time, a round per call. */
function sequentialClient(body: Buffer): { round(url: string): Promise<SequentialResult>; close(): Promise<void> } {
  const worker = startTypeScriptWorker(new URL('./sequential-client.ts', import.meta.url), { workerData: body });
  return {
    round: async (url) => {
      worker.postMessage({ url, seconds: ROUND_SECONDS } satisfies SequentialRound);
      const [result] = (await once(worker, 'message')) as [SequentialResult];
      if (result.errors) throw new Error(`${url}: ${result.errors} failed requests`);
      return result;
    },
    close: async () => {
      worker.postMessage('close');
      await once(worker, 'exit');
    },
  };
}

function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

/** The obvious way to write the server: stock body parsing, then copy the nested arrays out. */
async function startNaiveServer(session: ort.InferenceSession): Promise<{ url: string; close(): Promise<void> }> {
  const app = Fastify({ bodyLimit: 16 * 1024 * 1024 });
  app.post('/score', async (request) => {
    const nested = (request.body as { data: number[][][][] }).data;
    const values = Float32Array.from(nested.flat(3));
    normalizeInput(values, 'pixels', MEAN, STD);
    const started = performance.now();
    const output = await session.run({ [session.inputNames[0]!]: new ort.Tensor('float32', values, [...INPUT_SHAPE]) });
    const time = (performance.now() - started) / 1000;
    return { result: softmax(output[session.outputNames[0]!]!.data as Float32Array), time };
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/score`, close: () => app.close() };
}

/** A natural-looking test picture (smooth gradients plus noise), as a client would send it. */
async function requestBody(): Promise<string> {
  const size = 320;
  const raw = Buffer.alloc(size * size * 3);
  for (let i = 0; i < size * size; i++) {
    const x = i % size;
    const y = Math.floor(i / size);
    raw[i * 3] = (x * 0.7 + ((i * 7919) % 23)) & 255;
    raw[i * 3 + 1] = (y * 0.6 + ((i * 104729) % 31)) & 255;
    raw[i * 3 + 2] = ((x + y) * 0.4) & 255;
  }
  const png = await sharp(raw, { raw: { width: size, height: size, channels: 3 } })
    .png()
    .toBuffer();
  return scoreRequestBody(await imageToPixels(png));
}

export async function run(): Promise<BenchResult[]> {
  const modelPath = resolveModelFile({ relativePath: DEFAULT_MODEL.relativePath, dataDir: '.offcloud' });
  const session = await ort.InferenceSession.create(modelPath, serverSessionOptions(THREADS));
  const body = await requestBody();
  const bytes = Buffer.from(body);
  const prepared = readTensorBody(bytes).values;
  normalizeInput(prepared, 'pixels', MEAN, STD);
  const tensor = new ort.Tensor('float32', prepared, [...INPUT_SHAPE]);
  const feeds = { [session.inputNames[0]!]: tensor };
  for (let i = 0; i < 20; i++) await session.run(feeds);
  const pixels = readerPixelTransform('auto', MEAN, STD);
  const chunks: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += 65536) chunks.push(bytes.subarray(at, at + 65536));
  const input = new Float32Array(prepared.length);
  const readAsServed = () => {
    // As the server reads it: socket-sized chunks, pixel transform applied (bytes → the model's input),
    // into an input array used before.
    const stream = new TensorBodyStream(INPUT_LAYOUT, pixels, input);
    for (const chunk of chunks) stream.push(chunk);
    if (!stream.end().pixelsApplied) throw new Error('the bench body was not read as pixels');
  };
  const naiveParseMs = median(timeSync(15, 4, () => Float32Array.from((JSON.parse(bytes.toString('utf8')) as { data: number[][][][] }).data.flat(3))));

  const ours = await startScoring({ port: 0, logLevel: 'silent', threads: THREADS });
  const naive = await startNaiveServer(session);
  const oursUrl = ours.urls[0]!.url;
  const sequential = sequentialClient(bytes);
  try {
    const load = (url: string, connections: number) => clientLoad(url, body, connections);
    await load(oursUrl, 1);
    await load(naive.url, 1);

    // Per-request samples in interleaved rounds: (a) session.run alone, (b) JSON.parse alone (from the
    // bytes, as a server has them), our reader (whole body → numbers as written; and as served),
    // (c) ours and (d) naive end to end, one request at a time.
    const a: number[] = [];
    const b: number[] = [];
    const reader: number[] = [];
    const readerAsServed: number[] = [];
    const c: number[] = [];
    const d: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      for (let i = 0; i < 10; i++) {
        const started = performance.now();
        await session.run(feeds);
        a.push(performance.now() - started);
      }
      b.push(...timeSync(4, 5, () => JSON.parse(bytes.toString('utf8'))));
      reader.push(...timeSync(4, 5, () => readTensorBody(bytes)));
      readerAsServed.push(...timeSync(4, 5, readAsServed));
      c.push(...(await sequential.round(oursUrl)).latenciesMs);
      d.push(...(await sequential.round(naive.url)).latenciesMs);
    }
    const aMs = median(a);
    const bMs = median(b);
    const readerMs = median(reader);
    const readerAsServedMs = median(readerAsServed);
    const cMs = median(c);
    const dMs = median(d);

    // Throughput: (a) alone, then (c) ours and (d) the naive server under autocannon, alternating.
    const aRps1 = await loopRate(1, SECONDS, () => session.run(feeds));
    const aRps4 = await loopRate(4, SECONDS, () => session.run(feeds));
    const c1 = await load(oursUrl, 1);
    const d1 = await load(naive.url, 1);
    const c4 = await load(oursUrl, 4);
    const d4 = await load(naive.url, 4);
    for (const [label, r] of [
      ['ours c=1', c1],
      ['naive c=1', d1],
      ['ours c=4', c4],
      ['naive c=4', d4],
    ] as const) {
      if (r.errors) throw new Error(`${label}: ${r.errors} failed requests`);
    }
    const figures = {
      machine: {
        cpus: availableParallelism(),
        ortThreads: THREADS,
        bodyBytes: bytes.length,
        secondsPerLoad: SECONDS,
        rounds: ROUNDS,
        roundSeconds: ROUND_SECONDS,
      },
      a_sessionRun: { msPerRun: aMs, samples: a.length, rpsC1: aRps1, rpsC4: aRps4 },
      b_jsonParse: { msPerBody: bMs, samples: b.length, rps: 1000 / bMs },
      reader: { msPerBody: readerMs, asServedMsPerBody: readerAsServedMs, naiveParseAndFlattenMs: naiveParseMs },
      c_ours: {
        msPerRequestC1: cMs,
        meanMsOneAtATime: mean(c),
        requestsOneAtATime: c.length,
        autocannonP50MsC1: c1.p50ms,
        rpsC1: c1.rps,
        rpsC4: c4.rps,
        p99msC1: c1.p99ms,
        p99msC4: c4.p99ms,
      },
      d_naive: {
        msPerRequestC1: dMs,
        meanMsOneAtATime: mean(d),
        requestsOneAtATime: d.length,
        autocannonP50MsC1: d1.p50ms,
        rpsC1: d1.rps,
        rpsC4: d4.rps,
        p99msC1: d1.p99ms,
        p99msC4: d4.p99ms,
      },
      ratios: {
        cOverAplusB: cMs / (aMs + bMs),
        cMeanOverAplusBMeans: mean(c) / (mean(a) + mean(b)),
        cOverDThroughputC1: c1.rps / d1.rps,
        cOverDThroughputC4: c4.rps / d4.rps,
      },
    };
    return [
      result({
        name: 'scoring body → model input as the server reads it (ms per body)',
        unit: 'ms',
        ours: readerAsServedMs,
        baseline: 'JSON.parse alone',
        baselineValue: bMs,
        better: 'lower',
      }),
      result({
        name: 'scoring body parse into the tensor (ms per body)',
        unit: 'ms',
        ours: readerMs,
        baseline: 'JSON.parse alone',
        baselineValue: bMs,
        better: 'lower',
        details: figures,
      }),
      result({
        name: 'scoring POST /score median per request at concurrency 1 (ms)',
        unit: 'ms',
        ours: cMs,
        baseline: '(a) session.run + (b) JSON.parse',
        baselineValue: aMs + bMs,
        better: 'lower',
      }),
      result({
        name: 'scoring POST /score req/s at concurrency 1',
        unit: 'req/s',
        ours: c1.rps,
        baseline: '(d) naive server',
        baselineValue: d1.rps,
        better: 'higher',
      }),
      result({
        name: 'scoring POST /score req/s at concurrency 4',
        unit: 'req/s',
        ours: c4.rps,
        baseline: '(d) naive server',
        baselineValue: d4.rps,
        better: 'higher',
      }),
    ];
  } finally {
    await sequential.close();
    await ours.close();
    await naive.close();
    await session.release();
  }
}
