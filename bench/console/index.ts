/**
 * `npm run bench -- console`: how long each console page takes to paint and
 * to show its data with 1,000 devices (hub and DevSvc), 10,000 telemetry
 * messages and 10,000 blobs, against the same page with almost nothing (the
 * baseline); the console's own memory (it runs alone in its process) and CPU
 * time per page load; the size of the page it ships. Hub, storage and a DevSvc
 * replica run in another child process.
 *
 * Each figure is reported as soon as it is measured, and each phase that
 * fails says why and lets the next go on: loading the blobs has its own time
 * limit (OFFCLOUD_BENCH_CONSOLE_BLOB_SECONDS, 300 s), after which the storage
 * page is timed with the blobs loaded so far, and the figure says how many.
 */
import { readFile } from 'node:fs/promises';
import { Agent as HttpsAgent } from 'node:https';
import { loadavg, tmpdir } from 'node:os';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { BlobServiceClient, type StoragePipelineOptions } from '@azure/storage-blob';
import deviceSdk from 'azure-iot-device';
import mqttTransport from 'azure-iot-device-mqtt';
import { chromium, type BrowserContext } from 'playwright-core';
import { CHROMIUM_ARGS } from '../../test/console/harness.ts';
import { loadAssets } from '../../src/console/assets.ts';
import { addDevice, deviceFilePath } from '../../src/devices/store.ts';
import { startChildServers } from '../common/child.ts';
import { sized } from '../common/quick.ts';
import { result, type BenchContext, type BenchResult } from '../common/result.ts';
import type { PublishedFacts } from '../../src/common/facts.ts';

const DEVICES = sized(1000, 10);
const TELEMETRY = sized(10_000, 20);
/** The telemetry messages the hub page shows. */
const SHOWN = Math.min(50, TELEMETRY);
const BLOBS = Number(process.env.OFFCLOUD_BENCH_CONSOLE_BLOBS ?? sized(10_000, 10));
const BLOB_SECONDS = Number(process.env.OFFCLOUD_BENCH_CONSOLE_BLOB_SECONDS ?? 300);
/** Uploads in flight at once while loading the blobs. */
const UPLOADERS = 32;
const ROUNDS = sized(3, 1);
/** How long DevSvc gets to serve every device written to its file (it rereads the file on each change). */
const DEVSVC_WAIT_MS = sized(120_000, 30_000);

interface Components {
  dataDir: string;
  caCertPath: string;
  consoleOptions: Record<string, unknown>;
  facts: PublishedFacts;
}

/** utime + stime of a process, in ms (Linux /proc; clock ticks of 10 ms). */
async function cpuMs(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

/** Runs `each` over the items with `width` in flight, until they are done or `until` passes; answers how many were done. */
async function pool<T>(items: T[], width: number, until: number, each: (item: T) => Promise<unknown>): Promise<number> {
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < items.length && Date.now() < until) {
      await each(items[next++]!);
      done++;
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  return done;
}

/** What a page must show: each selector matching at least that many elements. */
type Ready = [string, number][];

interface PageTime {
  /** From navigation until the data is on screen (checked every frame). */
  data: number;
  fcp: number;
}

async function pageTime(browser: BrowserContext, url: string, ready: Ready, before?: string): Promise<PageTime> {
  const page = await browser.newPage();
  try {
    await page.goto(url);
    if (before) {
      await page.waitForSelector(before);
      await page.click(before);
    }
    // A function, not a string: the console's Content-Security-Policy forbids eval.
    await page.waitForFunction((want) => want.every(([selector, count]) => document.querySelectorAll(selector).length >= count), ready, {
      polling: 'raf',
      timeout: 60_000,
    });
    return page.evaluate(() => ({
      data: performance.now(),
      fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN,
    }));
  } finally {
    await page.close();
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

export async function run(context: BenchContext): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  const report = (r: BenchResult) => {
    context.report(r);
    results.push(r);
  };
  const started = Date.now();
  const progress = (what: string) => console.error(`bench console: ${what} (at ${((Date.now() - started) / 1000).toFixed(0)} s, load ${load()})`);
  /** A phase that fails says so; the figures before and after it still come. */
  const phase = async (what: string, body: () => Promise<void>) => {
    try {
      await body();
    } catch (err) {
      progress(`${what} failed: ${(err as Error).message.split('\n')[0]}`);
    }
  };

  const assets = [...loadAssets()];
  const kib = (list: typeof assets) => list.reduce((n, [, a]) => n + a.body.length, 0) / 1024;
  report(
    result({
      name: 'shipped page (our modules, CSS, HTML + preact, hooks, htm)',
      unit: 'KiB',
      ours: kib(assets),
      baseline: 'the library alone',
      baselineValue: kib(assets.filter(([name]) => name.startsWith('lib/'))),
      better: 'lower',
      details: { files: assets.length, uncompressed: true },
    }),
  );

  const components = await startChildServers<Components>(new URL('./servers.ts', import.meta.url));
  const { dataDir, caCertPath, consoleOptions, facts } = components.info;
  const consoleChild = await startChildServers<{ base: string; pid: number }>(new URL('./servers.ts', import.meta.url), [
    'console',
    JSON.stringify({ ...consoleOptions, dataDir }),
  ]);
  const { base, pid } = consoleChild.info;
  const profile = await mkdtemp(join(tmpdir(), 'offcloud-bench-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: CHROMIUM_ARGS,
  });
  const ca = await readFile(caCertPath, 'utf8');
  const blobs = BlobServiceClient.fromConnectionString(facts.storage!.connectionString, {
    agent: new HttpsAgent({ ca, keepAlive: true, maxSockets: UPLOADERS }),
  } as StoragePipelineOptions).getContainerClient('bench');
  const device = deviceSdk.Client.fromConnectionString(facts.hub!.demoDevice!.connectionString, mqttTransport.Mqtt);

  /** Times a page ROUNDS times (medians), with the console's CPU time per load. */
  const time = async (hash: string, ready: Ready, before?: string) => {
    const times: PageTime[] = [];
    const cpuBefore = await cpuMs(pid);
    for (let i = 0; i < ROUNDS && !context.signal.aborted; i++) times.push(await pageTime(browser, `${base}/#/${hash}`, ready, before));
    return {
      data: median(times.map((t) => t.data)),
      fcp: median(times.map((t) => t.fcp)),
      cpuPerLoad: ((await cpuMs(pid)) - cpuBefore) / times.length,
    };
  };
  type Timed = Awaited<ReturnType<typeof time>>;
  const reportPage = (name: string, loaded: Timed, baseline: string, empty: Timed, extra: Record<string, unknown> = {}) =>
    report(
      result({
        name,
        unit: 'ms',
        ours: loaded.data,
        baseline,
        baselineValue: empty.data,
        better: 'lower',
        details: {
          firstContentfulPaintMs: loaded.fcp,
          baselineFirstContentfulPaintMs: empty.fcp,
          consoleCpuMsPerLoad: loaded.cpuPerLoad,
          baselineConsoleCpuMsPerLoad: empty.cpuPerLoad,
          loadAverage: load(),
          rounds: ROUNDS,
          note: 'shared 2-core machine: not quiet',
          ...extra,
        },
      }),
    );
  const hubReady = (devices: number, telemetry: number): Ready => [
    ['table.devices tbody tr', devices],
    ['ol.telemetry li', telemetry],
  ];
  const devicesReady = (devices: number): Ready => [
    ['table[aria-label="devices"] tbody tr', devices],
    ['table[aria-label="replicas"] details li', devices],
  ];
  const blobsReady = (rows: number): Ready => [['table.blobs tbody tr', rows]];

  try {
    await device.setOptions({ ca });
    await device.open();
    await blobs.create();
    await blobs.getBlockBlobClient('one.txt').upload('x', 1);
    const rssAtStart = await rssMiB(pid);
    progress('servers and browser started');

    const overview = await time('overview', [['dl.endpoints', 1]]);
    const emptyHub = await time('hub', hubReady(1, 0));
    const emptyDevices = await time('devices', devicesReady(3));
    const emptyStorage = await time('storage', blobsReady(1), 'button.link');
    progress(`nearly empty pages: hub ${emptyHub.data.toFixed(0)} ms, devices ${emptyDevices.data.toFixed(0)} ms, storage ${emptyStorage.data.toFixed(0)} ms`);

    await phase('the hub page', async () => {
      // Devices through the hub's REST API (via the console), telemetry from the SDK device.
      const put = (id: string) =>
        fetch(`${base}/api/hub/devices/${id}`, {
          method: 'PUT',
          headers: { 'x-offcloud-console': '1', 'content-type': 'application/json' },
          body: JSON.stringify({ deviceId: id }),
        }).then((r) => r.arrayBuffer());
      await pool(
        Array.from({ length: DEVICES - 1 }, (_, i) => `bench-${i}`),
        16,
        Infinity,
        put,
      );
      await pool(
        Array.from({ length: TELEMETRY }, (_, i) => i),
        200,
        Infinity,
        (i) => device.sendEvent(new deviceSdk.Message(JSON.stringify({ i, temperature: 20 + (i % 10) }))),
      );
      progress(`${DEVICES} hub devices made, ${TELEMETRY} telemetry messages sent`);
      const hub = await time('hub', hubReady(DEVICES, SHOWN));
      reportPage(`hub page: ${DEVICES} devices and the last ${SHOWN} of ${TELEMETRY} messages shown`, hub, '1 device, no telemetry', emptyHub);
    });

    await phase('the devices page', async () => {
      // Beside the 3 seed devices, in the file DevSvc serves and the console lists (DevSvc rereads it when it changes).
      for (let i = 0; i < DEVICES - 3; i++) await addDevice(deviceFilePath(dataDir), `bench-${i}`, i % 2 === 0);
      progress(`${DEVICES - 3} devices added to DevSvc's file`);
      // DevSvc rereads the file after each of those writes: time the page once it answers for them all.
      for (const until = Date.now() + DEVSVC_WAIT_MS; ;) {
        const answer = (await (await fetch(`${base}/api/devsvc/replicas`)).json()) as {
          replicas: { health: string; devices: { name: string; answer: string }[] }[];
        };
        const answered = answer.replicas[0]?.devices.filter((d) => d.answer === 'active' || d.answer === 'inactive').length ?? 0;
        if (answered === DEVICES) {
          progress(`DevSvc answers for all ${DEVICES} devices`);
          break;
        }
        if (Date.now() > until) throw new Error(`DevSvc never answered for all ${DEVICES} devices; last answer: ${JSON.stringify(answer)}`);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      const devices = await time('devices', devicesReady(DEVICES));
      reportPage(`devices page: ${DEVICES} devices listed and each asked of the DevSvc replica`, devices, 'the 3 seed devices', emptyDevices);
    });

    await phase('the storage page', async () => {
      const started = Date.now();
      const names = Array.from({ length: BLOBS - 1 }, (_, i) => `dir/blob-${String(i).padStart(5, '0')}.txt`);
      let failure: Error | undefined;
      const uploaded = await pool(names, UPLOADERS, started + BLOB_SECONDS * 1000, (name) =>
        blobs
          .getBlockBlobClient(name)
          .upload('data', 4)
          .catch((err: Error) => (failure ??= err)),
      ).then((n) => n + 1);
      const seconds = (Date.now() - started) / 1000;
      progress(`${uploaded} blobs in storage after ${seconds.toFixed(0)} s${failure ? ` (an upload failed: ${failure.message.split('\n')[0]})` : ''}`);
      const storage = await time('storage', blobsReady(Math.min(200, uploaded)), 'button.link');
      reportPage(`storage page: the first ${Math.min(200, uploaded)} of ${uploaded} blobs shown`, storage, '1 blob', emptyStorage, {
        blobsLoaded: uploaded,
        blobsWanted: BLOBS,
        uploadSeconds: seconds,
        uploadsPerSecond: (uploaded - 1) / seconds,
      });
    });

    report(
      result({
        name: 'overview page: every component probed and shown',
        unit: 'ms',
        ours: overview.data,
        baseline: 'its first contentful paint',
        baselineValue: overview.fcp,
        better: 'lower',
        details: { consoleCpuMsPerLoad: overview.cpuPerLoad, loadAverage: load() },
      }),
    );
    report(
      result({
        name: 'console memory (RSS) after the loaded pages',
        unit: 'MiB',
        ours: await rssMiB(pid),
        baseline: 'RSS at start',
        baselineValue: rssAtStart,
        better: 'lower',
        details: { loadAverage: load(), note: 'the console alone in its process, tsx loaded' },
      }),
    );
    return results;
  } finally {
    await device.close().catch(() => undefined);
    await browser.close();
    await rm(profile, { recursive: true, force: true });
    await consoleChild.stop();
    await components.stop();
  }
}
