/**
 * `npm run bench -- console`: how long the console's pages take to show their
 * data with 1,000 devices, 10,000 telemetry messages and 10,000 blobs, against
 * the same pages with almost nothing (the baseline); the console's own memory
 * (it runs alone in its process) and CPU time per page load; the size of the
 * page it ships. Hub and storage run in another child process.
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
import { startChildServers } from '../common/child.ts';
import { result, type BenchContext, type BenchResult } from '../common/result.ts';

const DEVICES = 1000;
const TELEMETRY = 10_000;
/** Storage rewrites its blob index on each upload, so 10,000 take minutes to load on a busy machine: the variable makes fewer. */
const BLOBS = Number(process.env.OFFCLOUD_BENCH_CONSOLE_BLOBS ?? 10_000);
const ROUNDS = 3;

interface Components {
  caCertPath: string;
  consoleOptions: Record<string, unknown>;
  credentials: Record<string, string[]>;
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

async function inBatches<T>(items: T[], size: number, each: (item: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(each));
}

/** Milliseconds from navigation until `ready` holds in the page (checked every frame), and the first contentful paint. */
/** Rows the page must show: `[selector, count]` pairs. */
type Ready = [string, number][];

async function pageTimes(browser: BrowserContext, url: string, ready: Ready, before?: string): Promise<{ data: number; fcp: number }> {
  const page = await browser.newPage();
  try {
    await page.goto(url);
    if (before) {
      await page.waitForSelector(before);
      await page.click(before);
    }
    // A function, not a string: the console's Content-Security-Policy forbids eval.
    await page.waitForFunction((want) => want.every(([selector, count]) => document.querySelectorAll(selector).length === count), ready, {
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

export async function run(context: BenchContext): Promise<BenchResult[]> {
  const components = await startChildServers<Components>(new URL('./servers.ts', import.meta.url));
  const { caCertPath, consoleOptions, credentials } = components.info;
  const consoleChild = await startChildServers<{ base: string; pid: number }>(new URL('./servers.ts', import.meta.url), [
    'console',
    JSON.stringify({ ...consoleOptions, dataDir: join(caCertPath, '..', '..') }),
  ]);
  const { base, pid } = consoleChild.info;
  const profile = await mkdtemp(join(tmpdir(), 'offcloud-bench-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: CHROMIUM_ARGS,
  });
  const results: BenchResult[] = [];
  const ca = await readFile(caCertPath, 'utf8');
  const blobs = BlobServiceClient.fromConnectionString(
    credentials.storage!.find((l) => l.startsWith('connection string: '))!.slice('connection string: '.length),
    { agent: new HttpsAgent({ ca, keepAlive: true }) } as StoragePipelineOptions,
  ).getContainerClient('bench');
  const device = deviceSdk.Client.fromConnectionString(
    credentials.hub!.find((l) => l.startsWith('device demo-device: '))!.slice('device demo-device: '.length),
    mqttTransport.Mqtt,
  );
  try {
    await device.setOptions({ ca });
    await device.open();
    await blobs.create();
    await blobs.getBlockBlobClient('one.txt').upload('x', 1);

    const rssAtStart = await rssMiB(pid);
    const hubReady = (devices: number, telemetry: number): Ready => [
      ['table.devices tbody tr', devices],
      ['ol.telemetry li', telemetry],
    ];
    const blobsReady = (rows: number): Ready => [['table.blobs tbody tr', rows]];
    const measure = async (devices: number, telemetry: number, blobRows: number) => {
      const hub: { data: number; fcp: number }[] = [];
      const storage: { data: number; fcp: number }[] = [];
      const cpuBefore = await cpuMs(pid);
      for (let i = 0; i < ROUNDS && !context.signal.aborted; i++) {
        hub.push(await pageTimes(browser, `${base}/#/hub`, hubReady(devices, telemetry)));
        storage.push(await pageTimes(browser, `${base}/#/storage`, blobsReady(blobRows), 'button.link'));
      }
      const cpuPerLoad = ((await cpuMs(pid)) - cpuBefore) / (hub.length + storage.length);
      return {
        hub: median(hub.map((t) => t.data)),
        hubFcp: median(hub.map((t) => t.fcp)),
        storage: median(storage.map((t) => t.data)),
        storageFcp: median(storage.map((t) => t.fcp)),
        cpuPerLoad,
      };
    };

    const progress = (what: string) => console.error(`bench console: ${what} (load ${loadavg()[0]!.toFixed(1)})`);
    const empty = await measure(1, 0, 1);
    progress(`empty pages: hub ${empty.hub.toFixed(0)} ms, storage ${empty.storage.toFixed(0)} ms`);
    // The data: devices through the hub's REST API (via the console), telemetry from the SDK device, blobs through the storage SDK.
    const put = (id: string) =>
      fetch(`${base}/api/hub/devices/${id}`, {
        method: 'PUT',
        headers: { 'x-offcloud-console': '1', 'content-type': 'application/json' },
        body: JSON.stringify({ deviceId: id }),
      }).then((r) => r.arrayBuffer());
    await inBatches(
      Array.from({ length: DEVICES - 1 }, (_, i) => `bench-${i}`),
      50,
      put,
    );
    progress(`${DEVICES} devices made`);
    await inBatches(
      Array.from({ length: TELEMETRY }, (_, i) => i),
      200,
      (i) => device.sendEvent(new deviceSdk.Message(JSON.stringify({ i, temperature: 20 + (i % 10) }))),
    );
    progress(`${TELEMETRY} telemetry messages sent`);
    await inBatches(
      Array.from({ length: BLOBS - 1 }, (_, i) => `dir/blob-${String(i).padStart(5, '0')}.txt`),
      64,
      (name) => blobs.getBlockBlobClient(name).upload('data', 4),
    );
    progress(`${BLOBS} blobs uploaded`);
    const full = await measure(DEVICES, 50, 200);
    const rssAfter = await rssMiB(pid);
    const load = loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
    const details = {
      loadAverage: load,
      rounds: ROUNDS,
      note: 'machine shared by eight sessions: not quiet',
      cpuMsPerPageLoadEmpty: empty.cpuPerLoad,
      cpuMsPerPageLoadFull: full.cpuPerLoad,
    };
    const report = (r: BenchResult) => {
      context.report(r);
      results.push(r);
    };
    report(
      result({
        name: 'hub page: devices and telemetry shown (1,000 devices, 10,000 messages)',
        unit: 'ms',
        ours: full.hub,
        baseline: '1 device, no telemetry',
        baselineValue: empty.hub,
        better: 'lower',
        details: { ...details, firstContentfulPaintMs: full.hubFcp, baselineFcpMs: empty.hubFcp },
      }),
    );
    report(
      result({
        name: `storage page: first 200 blobs shown (${BLOBS} blobs)`,
        unit: 'ms',
        ours: full.storage,
        baseline: '1 blob',
        baselineValue: empty.storage,
        better: 'lower',
        details: { ...details, firstContentfulPaintMs: full.storageFcp, baselineFcpMs: empty.storageFcp },
      }),
    );
    report(
      result({
        name: 'console memory (RSS) after the loaded pages',
        unit: 'MiB',
        ours: rssAfter,
        baseline: 'RSS at start',
        baselineValue: rssAtStart,
        better: 'lower',
        details,
      }),
    );
    const assets = [...loadAssets()];
    const bytes = (list: typeof assets) => list.reduce((n, [, a]) => n + a.body.length, 0) / 1024;
    report(
      result({
        name: 'shipped page (our modules, CSS, HTML + preact, hooks, htm)',
        unit: 'KiB',
        ours: bytes(assets),
        baseline: 'the library alone',
        baselineValue: bytes(assets.filter(([name]) => name.startsWith('lib/'))),
        better: 'lower',
        details: { files: assets.length, uncompressed: true },
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
