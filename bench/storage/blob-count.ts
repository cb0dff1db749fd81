/**
 * Storage as a container fills: uploads/s and the server's CPU per upload at 1,000,
 * 5,000 and 10,000 blobs (small overwrites, eight at once, Shared Key over HTTP so the
 * server's own work dominates), against the same in an empty container; then restart
 * time with 10,000 blobs against a start on an empty data dir.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BlobServiceClient, StorageSharedKeyCredential, type ContainerClient } from '@azure/storage-blob';
import { startChildServers, type ChildServers } from '../common/child.ts';
import { cpuWithEndedChildren } from '../common/cpu.ts';
import { sized } from '../common/quick.ts';
import { result, type BenchResult, type BenchContext } from '../common/result.ts';
import { AccountStore } from '../../src/storage/persistence/store.ts';

interface ServerInfo {
  httpBlobEndpoint: string;
  accountKey: string;
  pid: number;
}

/** The blob count the others are compared with. */
const FIRST = sized(100, 20);
const LEVELS = sized([1_000, 5_000, 10_000], [50]);
const CONCURRENCY = 8;
const MEASURED_UPLOADS = sized(400, 20);
const BODY = Buffer.alloc(1024, 'x');
const ACCOUNT = 'devstoreaccount1';

const blobName = (i: number) => `blob-${String(i).padStart(6, '0')}`;

async function startTimed(dataDir: string): Promise<{ servers: ChildServers<ServerInfo>; ms: number }> {
  const start = performance.now();
  const servers = await startChildServers<ServerInfo>(new URL('./servers.ts', import.meta.url), [dataDir]);
  return { servers, ms: performance.now() - start };
}

function containerOf(info: ServerInfo): ContainerClient {
  const service = new BlobServiceClient(info.httpBlobEndpoint, new StorageSharedKeyCredential(ACCOUNT, info.accountKey));
  return service.getContainerClient('count');
}

/** Uploads `names` eight at a time. */
async function upload(container: ContainerClient, names: string[]): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < names.length) await container.getBlockBlobClient(names[next++]!).uploadData(BODY);
    }),
  );
}

/** Overwrites MEASURED_UPLOADS of the container's `count` blobs: uploads/s and server CPU ms per upload. */
async function measureOverwrites(container: ContainerClient, pid: number, count: number) {
  const names = Array.from({ length: MEASURED_UPLOADS }, (_, i) => blobName(Math.floor((i * count) / MEASURED_UPLOADS)));
  const cpu = cpuWithEndedChildren(pid);
  const start = performance.now();
  await upload(container, names);
  const seconds = (performance.now() - start) / 1000;
  return { perSecond: MEASURED_UPLOADS / seconds, cpuMsPerUpload: (cpuWithEndedChildren(pid) - cpu) / MEASURED_UPLOADS, load: loadavg()[0]! };
}

export async function measureBlobCounts(context?: Pick<BenchContext, 'report'>): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  const report = (r: BenchResult) => (results.push(r), context?.report(r));
  const dataDir = await mkdtemp(join(tmpdir(), 'offcloud-bench-blob-count-'));
  let servers: ChildServers<ServerInfo> | undefined;
  try {
    const first = await startTimed(dataDir);
    servers = first.servers;
    const container = containerOf(servers.info);
    await container.create();
    await upload(
      container,
      Array.from({ length: FIRST }, (_, i) => blobName(i)),
    );
    const empty = await measureOverwrites(container, servers.info.pid, FIRST);
    let filled = FIRST;
    for (const level of LEVELS) {
      await upload(
        container,
        Array.from({ length: level - filled }, (_, i) => blobName(filled + i)),
      );
      filled = level;
      const at = await measureOverwrites(container, servers.info.pid, level);
      report(
        result({
          name: `storage uploads at ${level.toLocaleString('en')} blobs (1 KB overwrites, ${CONCURRENCY} at once, Shared Key)`,
          unit: 'uploads/s',
          ours: at.perSecond,
          baseline: `the same at ${FIRST} blobs`,
          baselineValue: empty.perSecond,
          better: 'higher',
          details: { cpuMsPerUpload: at.cpuMsPerUpload, cpuMsPerUploadAtFirst: empty.cpuMsPerUpload, loadAverage: at.load },
        }),
      );
    }
    await servers.stop();
    const openStart = performance.now();
    await AccountStore.open(`${dataDir}/storage/accounts/${ACCOUNT}`);
    const openMs = performance.now() - openStart;
    const again = await startTimed(dataDir);
    servers = again.servers;
    report(
      result({
        name: `storage restart with ${filled.toLocaleString('en')} blobs (start to ready)`,
        unit: 'ms',
        ours: again.ms,
        baseline: 'start on an empty data dir',
        baselineValue: first.ms,
        better: 'lower',
        details: { loadingTheIndexMs: openMs, loadAverage: loadavg()[0] },
      }),
    );
  } finally {
    await servers?.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
  return results;
}
