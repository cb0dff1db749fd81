/**
 * Blob storage against Azurite (the emulator most users run, from its npm package), both
 * driven by the same @azure/storage-blob client from this process with the development
 * account's Shared Key over HTTP, in alternating rounds: uploads and downloads of 1 KB, 1 MB
 * and 64 MB blobs, listing 10,000 blobs, and Put Block x 100 + Put Block List. Ours fsyncs
 * before every acknowledgement; Azurite does not. Each figure carries the CPU time per
 * request of each server process (from /proc) and the load average when it was taken.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { BlobServiceClient, StorageSharedKeyCredential, type ContainerClient } from '@azure/storage-blob';
import { startChildServers } from '../common/child.ts';
import { cpuWithEndedChildren } from '../common/cpu.ts';
import { alternate, median } from '../common/load.ts';
import { sized } from '../common/quick.ts';
import { result, type BenchContext, type BenchResult } from '../common/result.ts';
import { DEVELOPMENT_ACCOUNT, DEVELOPMENT_KEY } from '../../src/storage/persistence/accounts.ts';

const ROUNDS = sized(3, 1);
const CONCURRENCY = 8;
const KB = 1024;
const MB = 1024 * KB;
export const AZURITE = 'Azurite 3.37.0 (npm), same SDK client';

interface ServerInfo {
  ours: string;
  oursPid: number;
}

/** The blob service's entry point, as Azurite's package names it (its `azurite-blob` command). */
function azuriteBlobMain(): string {
  const manifest = createRequire(import.meta.url).resolve('azurite/package.json');
  const { bin } = createRequire(import.meta.url)(manifest) as { bin: Record<string, string> };
  return join(dirname(manifest), bin['azurite-blob']!);
}

/**
 * Starts Azurite on a free port, as a child of the bench process itself (so the bench runner
 * ends it if the bench is stopped), and answers with its account URL once it says it listens.
 */
async function startAzurite(location: string) {
  const azurite = spawn(
    process.execPath,
    // The SDK sends a newer x-ms-version than Azurite knows: without these two it refuses every request.
    [azuriteBlobMain(), '--blobHost', '127.0.0.1', '--blobPort', '0', '--location', location, '--silent', '--skipApiVersionCheck', '--loose'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: azurite.stdout });
  const url = await new Promise<string>((resolve, reject) => {
    lines.on('line', (line) => {
      const listening = /successfully listens on (http:\/\/\S+)/.exec(line);
      if (listening) resolve(listening[1]!);
    });
    azurite.once('exit', (code) => reject(new Error(`Azurite exited (${code}) before it listened`)));
  });
  return {
    url: `${url}/devstoreaccount1`,
    pid: azurite.pid!,
    stop: async () => {
      if (azurite.exitCode !== null) return;
      azurite.kill('SIGTERM');
      await once(azurite, 'exit');
    },
  };
}

interface Side {
  container: ContainerClient;
  pid: number;
}

interface Measured {
  itemsPerSecond: number;
  cpuMsPerRequest: number;
}

interface Row {
  name: string;
  unit: string;
  /** Items per round (an item is one request, or one blob of several requests). */
  items: number;
  requestsPerItem?: number;
  /** What one item counts for in the row's unit (MB of a transfer, blobs of a listing); 1 when absent. */
  perItem?: number;
  /** One item, on one side, in round `round`. */
  one(side: Side, item: number, round: number): Promise<unknown>;
}

/** Runs `items` items, CONCURRENCY at a time: the rate and the server's CPU per request. */
async function measure(side: Side, items: number, requestsPerItem: number, one: (item: number) => Promise<unknown>): Promise<Measured> {
  const cpuBefore = cpuWithEndedChildren(side.pid);
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, items) }, async () => {
      while (next < items) await one(next++);
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { itemsPerSecond: items / seconds, cpuMsPerRequest: (cpuWithEndedChildren(side.pid) - cpuBefore) / (items * requestsPerItem) };
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

/** Both sides, alternately, ROUNDS times: the medians, as one figure. */
async function compare([ours, azurite]: [Side, Side], row: Row): Promise<BenchResult> {
  const requestsPerItem = row.requestsPerItem ?? 1;
  let round = 0;
  const rounds = await alternate(
    ROUNDS,
    () => measure(ours, row.items, requestsPerItem, (item) => row.one(ours, item, round)),
    async () => {
      const measured = await measure(azurite, row.items, requestsPerItem, (item) => row.one(azurite, item, round));
      round++;
      return measured;
    },
  );
  const rate = (m: Measured) => m.itemsPerSecond * (row.perItem ?? 1);
  const cpu = (side: Measured[]) => Number(median(side.map((m) => m.cpuMsPerRequest)).toFixed(2));
  return result({
    name: row.name,
    unit: row.unit,
    ours: median(rounds.a.map(rate)),
    baseline: AZURITE,
    baselineValue: median(rounds.b.map(rate)),
    better: 'higher',
    details: {
      cpuMsPerRequest: { ours: cpu(rounds.a), azurite: cpu(rounds.b) },
      itemsPerRound: row.items,
      requestsPerItem,
      rounds: ROUNDS,
      concurrency: CONCURRENCY,
      loadAverage: load(),
    },
  });
}

function transfers(label: string, size: number, items: number): Row[] {
  const data = randomBytes(size);
  const unit = size >= MB ? 'MB/s' : 'blobs/s';
  const perItem = size >= MB ? size / MB : undefined;
  // One request per blob each way, so the rows compare the servers, not the SDK's splitting.
  return [
    {
      name: `storage upload ${label} blobs (vs Azurite)`,
      unit,
      items,
      perItem,
      one: (side, item, round) =>
        side.container.getBlockBlobClient(`${label}/${round}/${item}`).uploadData(data, { maxSingleShotSize: 256 * MB, concurrency: 1 }),
    },
    {
      name: `storage download ${label} blobs (vs Azurite)`,
      unit,
      items,
      perItem,
      one: (side, item) => side.container.getBlockBlobClient(`${label}/0/${item}`).downloadToBuffer(0, undefined, { concurrency: 1, blockSize: 256 * MB }),
    },
  ];
}

export async function measureAgainstAzurite(context: Pick<BenchContext, 'report' | 'signal'>): Promise<BenchResult[]> {
  const servers = await startChildServers<ServerInfo>(new URL('./azurite-servers.ts', import.meta.url));
  const azuriteDir = await mkdtemp(join(tmpdir(), 'bench-storage-azurite-'));
  const azurite = await startAzurite(azuriteDir).catch(async (err: unknown) => {
    await servers.stop();
    throw err;
  });
  const credential = new StorageSharedKeyCredential(DEVELOPMENT_ACCOUNT, DEVELOPMENT_KEY);
  const sides: [Side, Side] = [
    { container: new BlobServiceClient(servers.info.ours, credential).getContainerClient('bench'), pid: servers.info.oursPid },
    { container: new BlobServiceClient(azurite.url, credential).getContainerClient('bench'), pid: azurite.pid },
  ];
  const results: BenchResult[] = [];
  const run = async (row: Row) => {
    if (context.signal.aborted) return;
    const figure = await compare(sides, row);
    context.report(figure);
    const { cpuMsPerRequest, loadAverage } = figure.details as { cpuMsPerRequest: { ours: number; azurite: number }; loadAverage: string };
    console.log(`  CPU per request: ours ${cpuMsPerRequest.ours} ms, Azurite ${cpuMsPerRequest.azurite} ms; load average ${loadAverage}`);
    results.push(figure);
  };
  try {
    for (const side of sides) await side.container.create();
    for (const row of transfers('1 KB', KB, sized(400, 40))) await run(row);
    for (const row of transfers('1 MB', MB, sized(60, 4))) await run(row);
    if (!sized(false, true)) for (const row of transfers('64 MB', 64 * MB, 4)) await run(row);

    const listed = sized(10_000, 200);
    const tiny = Buffer.from('x');
    for (const side of sides) await measure(side, listed, 1, (i) => side.container.getBlockBlobClient(`list/${String(i).padStart(6, '0')}`).uploadData(tiny));
    await run({
      name: `storage list ${listed} blobs, whole listing (vs Azurite)`,
      unit: 'blobs listed/s',
      items: 1,
      perItem: listed,
      requestsPerItem: Math.ceil(listed / 5000),
      one: async (side) => {
        let count = 0;
        for await (const page of side.container.listBlobsFlat({ prefix: 'list/' }).byPage({ maxPageSize: 5000 })) count += page.segment.blobItems.length;
        if (count !== listed) throw new Error(`${side.container.url}: listed ${count} of ${listed}`);
      },
    });

    const block = randomBytes(sized(64 * KB, 4 * KB));
    const ids = Array.from({ length: 100 }, (_, i) => Buffer.from(String(i).padStart(6, '0')).toString('base64'));
    await run({
      name: `storage Put Block x 100 (${block.length / KB} KB each) + Put Block List (vs Azurite)`,
      unit: 'blobs/s',
      items: sized(8, 1),
      requestsPerItem: ids.length + 1,
      one: async (side, item, round) => {
        const blob = side.container.getBlockBlobClient(`blocks/${round}/${item}`);
        for (const id of ids) await blob.stageBlock(id, block, block.length);
        await blob.commitBlockList(ids);
      },
    });
  } finally {
    await Promise.all([servers.stop(), azurite.stop()]);
    await rm(azuriteDir, { recursive: true, force: true });
  }
  return results;
}
