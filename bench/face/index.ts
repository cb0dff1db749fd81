/**
 * Face detect latency and throughput for photos of 1, 4 and 20 faces at 640
 * px and a 71-face crowd, detection only, with the seven attributes (age, gender, emotion, glasses, blur, exposure, noise) and with
 * every supported one, against the same models called directly in this
 * process in one thread (decode + detect + measure, no HTTP, no worker hop)
 * in the same run. Ours splits a photo's faces over the two workers, so
 * ours/direct shows the serving overhead and what the second core buys; each
 * figure comes with the CPU time per image and the load average, as the
 * machine is shared.
 */
import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { measurementsFor, SUPPORTED_ATTRIBUTES, type FaceAttribute } from '../../src/face/attributes.ts';
import { decodeImage } from '../../src/face/decode.ts';
import { MAX_FACES } from '../../src/face/detect.ts';
import { FaceModels } from '../../src/face/models/index.ts';
import { defaultModelPaths, startFaceWithBilling } from '../../test/face/container.ts';
import { median } from '../common/load.ts';
import { sized } from '../common/quick.ts';
import { result, type BenchContext, type BenchResult } from '../common/result.ts';
import { benchPhotos } from './photos.ts';

const SEVEN: FaceAttribute[] = ['age', 'gender', 'emotion', 'glasses', 'blur', 'exposure', 'noise'];
/**
 * (photo, attribute set) in the order they are measured: targets
 * first (20 faces ≤ 1.5 s, 1 face ≤ 300 ms with its attributes), so that a
 * run stopped at the timeout still has them.
 */
const RUNS: [photo: number, mode: string, attributes: FaceAttribute[], target?: string][] = [
  [0, SEVEN.join(','), SEVEN, 'target ≤ 300 ms'],
  [2, SEVEN.join(','), SEVEN, 'target ≤ 1500 ms'],
  [4, SEVEN.join(','), SEVEN, 'target ≤ 2000 ms'],
  [0, 'detection only', []],
  [2, 'detection only', []],
  [3, SEVEN.join(','), SEVEN],
  [1, SEVEN.join(','), SEVEN],
  [3, 'detection only', []],
  [1, 'detection only', []],
  [0, 'all supported attributes', [...SUPPORTED_ATTRIBUTES]],
  [1, 'all supported attributes', [...SUPPORTED_ATTRIBUTES]],
  [2, 'all supported attributes', [...SUPPORTED_ATTRIBUTES]],
];

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

interface Run {
  imagesPerSecond: number;
  p50ms: number;
  p99ms: number;
  /** CPU time of this whole process (server, its worker threads, the direct models) per image. */
  cpuMsPerImage: number;
  /** The 1-minute load average at the end: the machine is shared. */
  loadAverage: number;
  n: number;
}

/** `count` calls, `parallel` at a time; latency of each and images/s over the whole run. */
async function timed(count: number, parallel: number, call: () => Promise<unknown>): Promise<Run> {
  const latencies: number[] = [];
  let next = 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) {
        next++;
        const t = performance.now();
        await call();
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  return {
    imagesPerSecond: count / seconds,
    p50ms: median(latencies),
    p99ms: percentile(latencies, 99),
    cpuMsPerImage: (used.user + used.system) / 1000 / count,
    loadAverage: loadavg()[0]!,
    n: count,
  };
}

export async function run({ report, signal }: BenchContext): Promise<BenchResult[]> {
  const dataDir = await mkdtemp(join(tmpdir(), 'offcloud-face-bench-'));
  const { billing, face } = await startFaceWithBilling(dataDir);
  const rssWithContainer = process.memoryUsage().rss;
  const direct = await FaceModels.load(defaultModelPaths());
  const endpoint = face.urls[0]!.url;
  const results: BenchResult[] = [];
  try {
    const all = await benchPhotos();
    for (const [index, mode, attributes, target] of sized(RUNS, RUNS.slice(0, 1))) {
      signal.throwIfAborted();
      const photo = all[index]!;
      const query = attributes.length ? `?returnFaceAttributes=${attributes.join(',')}` : '';
      const wanted = measurementsFor(attributes, false);
      const viaHttp = async () => {
        const response = await request(endpoint + query, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: photo.bytes });
        const faces = (await response.body.json()) as unknown[];
        if (response.statusCode !== 200) throw new Error(`detect answered ${response.statusCode}`);
        return faces.length;
      };
      const viaModels = async () => {
        const image = await decodeImage(photo.bytes);
        return (await direct.measure(image, await direct.detect(image, MAX_FACES), wanted)).length;
      };
      // Warm-up: both workers (a worker's first call with a new set of models is slow) and the direct models.
      const [faces] = await Promise.all([viaHttp(), viaHttp()]);
      await viaModels();
      // Heavy runs get fewer calls so the whole benchmark stays within minutes on 2 cores.
      const count = sized(attributes.length === 0 ? 20 : Math.max(6, Math.round(48 / Math.max(1, faces))), 2);
      const ours = await timed(count, 1, viaHttp);
      const models = await timed(count, 1, viaModels);
      const both = await timed(count, 2, viaHttp);
      const figures = [
        result({
          name:
            `face detect latency (p50), ${photo.name} (${faces} found), ${mode}, one request at a time${target ? ` (${target})` : ''}; ` +
            `load average ${ours.loadAverage.toFixed(1)}; CPU per image: ours ${ours.cpuMsPerImage.toFixed(0)} ms, direct ${models.cpuMsPerImage.toFixed(0)} ms`,
          unit: 'ms',
          ours: ours.p50ms,
          baseline: 'the same models called directly in one thread, one image at a time',
          baselineValue: models.p50ms,
          better: 'lower',
          details: { ours, models },
        }),
        result({
          name: `face detect, ${photo.name} (${faces} found), ${mode}, one request at a time`,
          unit: 'images/s',
          ours: ours.imagesPerSecond,
          baseline: 'the same models called directly, one image at a time',
          baselineValue: models.imagesPerSecond,
          better: 'higher',
          details: { ours, models },
        }),
        result({
          name: `face detect, ${photo.name}, ${mode}, two connections (two workers)`,
          unit: 'images/s',
          ours: both.imagesPerSecond,
          baseline: 'the same models called directly, one image at a time',
          baselineValue: models.imagesPerSecond,
          better: 'higher',
          details: { ours: both, models },
        }),
      ];
      figures.forEach(report);
      results.push(...figures);
    }
    results.push(
      result({
        name: 'face container resident memory with two workers (RSS of this process before the direct models loaded)',
        unit: 'MiB',
        ours: rssWithContainer / 2 ** 20,
        baseline: 'the 6 GB the real container asks for (spec §4.12)',
        baselineValue: 6 * 1024,
        better: 'lower',
      }),
    );
    return results;
  } finally {
    await face.close();
    await billing.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}
