/**
 * The measuring side of the storage benchmark, in its own process so that
 * NODE_EXTRA_CA_CERTS is set at start: the official SDK with a managed
 * identity token uploads and downloads through offcloud, and the same bytes
 * are written (with fsync, as the server does) and read with `fs` directly.
 */
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { BlobServiceClient } from '@azure/storage-blob';
import { ManagedIdentityCredential } from '@azure/identity';
import { sized } from '../common/quick.ts';

const MB = 1024 * 1024;
const CONTAINERS = sized(10_000, 20);
const service = new BlobServiceClient(process.env.BLOB_ENDPOINT!, new ManagedIdentityCredential());
const container = service.getContainerClient('bench');
await container.createIfNotExists();
const scratch = await mkdtemp(join(tmpdir(), 'offcloud-bench-fs-'));

async function timed(run: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await run();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

async function fsWrite(path: string, data: Buffer): Promise<void> {
  const handle = await open(path, 'w');
  await handle.writeFile(data);
  await handle.sync();
  await handle.close();
}

const results: Record<string, { oursMBs: number; fsMBs: number }> = {};
type Size = [label: string, size: number, count: number];
const sizes = sized<Size[]>(
  [
    ['1 MB', MB, 20],
    ['64 MB', 64 * MB, 3],
  ],
  [['1 MB', MB, 2]],
);
for (const [label, size, count] of sizes) {
  const data = randomBytes(size);
  let up = 0;
  let down = 0;
  let fsUp = 0;
  let fsDown = 0;
  for (let i = 0; i < count; i++) {
    const blob = container.getBlockBlobClient(`blob-${label}-${i}`);
    up += await timed(() => blob.uploadData(data));
    down += await timed(() => blob.downloadToBuffer());
    const path = join(scratch, `file-${i}`);
    fsUp += await timed(() => fsWrite(path, data));
    fsDown += await timed(() => readFile(path));
  }
  const total = (size * count) / MB;
  results[`upload ${label}`] = { oursMBs: total / up, fsMBs: total / fsUp };
  results[`download ${label}`] = { oursMBs: total / down, fsMBs: total / fsDown };
}

// List Containers with 10,000 containers (20 in a quick run): SDK listing (two pages of 5,000) against fs.readdir of the same folders.
const creating = Array.from({ length: CONTAINERS }, (_, i) => `c${String(i).padStart(5, '0')}`);
for (let i = 0; i < creating.length; i += 50) {
  await Promise.all(creating.slice(i, i + 50).map((name) => service.getContainerClient(name).createIfNotExists()));
}
const listTimes: number[] = [];
let listed = 0;
for (let i = 0; i < 5; i++) {
  listTimes.push(
    await timed(async () => {
      listed = 0;
      for await (const page of service.listContainers().byPage({ maxPageSize: 5000 })) listed += page.containerItems?.length ?? 0;
    }),
  );
}
listTimes.sort((a, b) => a - b);
await rm(scratch, { recursive: true, force: true });
process.stdout.write(JSON.stringify({ results, list: { containers: listed, p50ms: listTimes[2]! * 1000, minms: listTimes[0]! * 1000 } }) + '\n');
