import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BlobServiceClient, RestError, StorageSharedKeyCredential } from '@azure/storage-blob';
import { crashRounds, diskFullRound, startChild, type Child } from './harness.ts';

const ACCOUNT = 'devstoreaccount1';
const WRITERS = 8;

interface StorageChild extends Child {
  service: BlobServiceClient;
}

async function startStorageChild(dataDir: string, extraArgs: string[] = []): Promise<StorageChild> {
  const child = await startChild(
    ['storage', '--data-dir', dataDir, '--port', '0', '--https-port', '0', ...extraArgs],
    /http:\/\/127\.0\.0\.1:\d+\/devstoreaccount1/,
  );
  const endpoint = /http:\/\/127\.0\.0\.1:\d+\/devstoreaccount1/.exec(child.readyLine)![0];
  const accounts = JSON.parse(await readFile(join(dataDir, 'storage', 'accounts.json'), 'utf8')) as { accounts: { name: string; keys: string[] }[] };
  const key = accounts.accounts.find((a) => a.name === ACCOUNT)!.keys[0]!;
  // One try per call: a write cut off by the kill must fail, not be retried against the next process.
  return { ...child, service: new BlobServiceClient(endpoint, new StorageSharedKeyCredential(ACCOUNT, key), { retryOptions: { maxTries: 1 } }) };
}

/** A blob version's bytes: a header naming it, then bytes derived from it, so a mix or a cut shows. */
function content(blob: string, version: number): Buffer {
  const size = 1000 + ((version * 7919) % 200_000);
  const out = Buffer.alloc(size);
  const header = Buffer.from(`${blob} v${version} ${size}\n`);
  header.copy(out);
  for (let i = header.length; i < size; i++) out[i] = (i * 31 + version) % 251;
  return out;
}

function versionOf(blob: string, bytes: Buffer): number {
  const match = /^(\S+) v(\d+) (\d+)\n/.exec(bytes.subarray(0, 100).toString('latin1'));
  assert.ok(match && match[1] === blob, `${blob} starts with its own header`);
  const version = Number(match[2]);
  assert.ok(content(blob, version).equals(bytes), `${blob} v${version} is whole, byte for byte`);
  return version;
}

const blockId = (k: number) => Buffer.from(`block-${String(k).padStart(4, '0')}`).toString('base64');

test('crash: storage keeps every acknowledged container, blob, block list and metadata over kill -9 during concurrent overwrites', async (t) => {
  // What the writers saw acknowledged and what they started, over every round.
  const acked = new Map<string, number>();
  const started = new Map<string, number>();
  const containers = new Set<string>();
  let nextContainer = 0;

  await crashRounds(t, {
    start: (dataDir) => startStorageChild(dataDir),
    async load({ service }, writers) {
      const data = service.getContainerClient('overwrites');
      if (!(await data.exists())) await data.create();
      await writers.run(WRITERS + 1, async (writer) => {
        if (writer === WRITERS) {
          // One writer makes containers, each with metadata naming it.
          const name = `box-${nextContainer++}`;
          await service.getContainerClient(name).create({ metadata: { made: name } });
          containers.add(name);
          return;
        }
        // Eight writers each overwrite their own blob in one container (one index): even
        // ones in a single upload, odd ones as a block list carrying the version as metadata.
        const name = `blob-${writer}`;
        const version = (started.get(name) ?? 0) + 1;
        started.set(name, version);
        const bytes = content(name, version);
        const blob = data.getBlockBlobClient(name);
        if (writer % 2 === 0) {
          await blob.upload(bytes, bytes.length, { metadata: { version: String(version) } });
        } else {
          const third = Math.ceil(bytes.length / 3);
          for (let k = 0; k < 3; k++) await blob.stageBlock(blockId(k), bytes.subarray(k * third, (k + 1) * third), Math.min(third, bytes.length - k * third));
          await blob.commitBlockList([0, 1, 2].map(blockId), { metadata: { version: String(version) } });
        }
        acked.set(name, version);
      });
    },
    async check({ service }, round, dataDir) {
      const listed: string[] = [];
      for await (const c of service.listContainers({ includeMetadata: true })) {
        listed.push(c.name);
        if (c.name.startsWith('box-')) assert.equal(c.metadata?.made, c.name, `${c.name}'s metadata`);
      }
      assert.equal(new Set(listed).size, listed.length, 'each container listed once');
      for (const name of containers) assert.ok(listed.includes(name), `round ${round}: acknowledged container ${name} is there`);

      const data = service.getContainerClient('overwrites');
      const blobs: string[] = [];
      for await (const b of data.listBlobsFlat()) blobs.push(b.name);
      assert.equal(new Set(blobs).size, blobs.length, 'each blob listed once');
      for (const [name, last] of started) {
        const blob = data.getBlockBlobClient(name);
        if (!acked.has(name) && !blobs.includes(name)) continue;
        const version = versionOf(name, await blob.downloadToBuffer());
        const lower = acked.get(name) ?? 1;
        assert.ok(version >= lower && version <= last, `round ${round}: ${name} is v${version}, acknowledged v${acked.get(name)}, last started v${last}`);
        assert.equal((await blob.getProperties()).metadata?.version, String(version), `${name}'s metadata belongs to its bytes`);
      }
      const files = await readdir(join(dataDir, 'storage', 'accounts', ACCOUNT, 'overwrites', 'data'));
      assert.equal(files.length, blobs.length, `round ${round}: one data file per blob, nothing half-written left: ${files.join(', ')}`);
    },
  });
});

test('crash: storage keeps every acknowledged blob and deletion over kill -9 while the blob index log is folded in after each change', async (t) => {
  // Each writer has its own container holding one blob, which it overwrites and now and
  // then deletes; with --compact-index-after 1 every change is followed by a compaction,
  // so the kill often lands in one. What each blob may be after a restart: what its last
  // acknowledged change made it, or what its one change in flight would have.
  type BlobState = number | 'absent';
  const acked = new Map<number, BlobState>();
  const inFlight = new Map<number, BlobState>();
  let nextVersion = 0;
  let cutCompactions = 0;
  const containerDir = (dataDir: string, writer: number) => join(dataDir, 'storage', 'accounts', ACCOUNT, `solo-${writer}`);

  await crashRounds(t, {
    rounds: 4,
    async start(dataDir) {
      for (let writer = 0; writer < WRITERS; writer++) {
        const files = await readdir(containerDir(dataDir, writer)).catch(() => []);
        const log = await readFile(join(containerDir(dataDir, writer), 'blobs.log')).catch(() => Buffer.alloc(0));
        if (files.some((f) => f.startsWith('blobs.json.')) || log.length > 0) cutCompactions++;
      }
      return startStorageChild(dataDir, ['--compact-index-after', '1']);
    },
    async load({ service }, writers) {
      await writers.run(WRITERS, async (writer, iteration) => {
        const container = service.getContainerClient(`solo-${writer}`);
        if (!acked.has(writer)) {
          await container.createIfNotExists();
          acked.set(writer, 'absent');
        }
        const blob = container.getBlockBlobClient('only');
        if (iteration % 4 === 3 && acked.get(writer) !== 'absent') {
          inFlight.set(writer, 'absent');
          await blob.delete();
        } else {
          const version = ++nextVersion;
          inFlight.set(writer, version);
          const bytes = content('only', version);
          await blob.upload(bytes, bytes.length, { metadata: { version: String(version) } });
        }
        acked.set(writer, inFlight.get(writer)!);
        inFlight.delete(writer);
      });
    },
    async check({ service }, round, dataDir) {
      for (const [writer, last] of acked) {
        const container = service.getContainerClient(`solo-${writer}`);
        const blob = container.getBlockBlobClient('only');
        const found: BlobState = (await blob.exists()) ? versionOf('only', await blob.downloadToBuffer()) : 'absent';
        const allowed = [last, ...(inFlight.has(writer) ? [inFlight.get(writer)!] : [])];
        assert.ok(allowed.includes(found), `round ${round}: solo-${writer}'s blob is ${found}, acknowledged ${last}, in flight ${inFlight.get(writer)}`);
        if (found !== 'absent') assert.equal((await blob.getProperties()).metadata?.version, String(found), 'its metadata belongs to its bytes');
        const files = await readdir(join(containerDir(dataDir, writer), 'data'));
        assert.equal(files.length, found === 'absent' ? 0 : 1, `round ${round}: solo-${writer} holds its blob's data file only: ${files.join(', ')}`);
        acked.set(writer, found);
        inFlight.delete(writer);
      }
    },
  });
  t.diagnostic(`containers a kill left between a change and the end of its compaction: ${cutCompactions}`);
});

test('disk full: storage refuses writes with 503 ServerBusy while its disk is full, shows none of them, takes writes again once space returns, and keeps every acknowledged one over restarts', async (t) => {
  // Per blob: the last acknowledged version (0: none yet) and the versions refused; containers likewise.
  const acked = new Map<string, number>();
  const refused = new Map<string, Set<number>>();
  const containers = { acked: new Set<string>(), refused: new Set<string>() };
  let next = 0;
  const refusal = (err: unknown) => err instanceof RestError && err.statusCode === 503 && err.code === 'ServerBusy';

  await diskFullRound(t, {
    start: (dataDir) => startStorageChild(dataDir),
    async load({ service }, writers) {
      const data = service.getContainerClient('full');
      await data.createIfNotExists();
      await writers.run(WRITERS + 1, async (writer) => {
        try {
          if (writer === WRITERS) {
            const name = `box-${next++}`;
            await service
              .getContainerClient(name)
              .create()
              .catch((err: unknown) => {
                if (refusal(err)) containers.refused.add(name);
                throw err;
              });
            containers.acked.add(name);
            return;
          }
          const name = `blob-${writer}`;
          const version = ++next;
          const bytes = content(name, version);
          try {
            await data.getBlockBlobClient(name).upload(bytes, bytes.length, { metadata: { version: String(version) } });
          } catch (err) {
            if (refusal(err)) refused.set(name, (refused.get(name) ?? new Set()).add(version));
            throw err;
          }
          acked.set(name, version);
        } catch (err) {
          if (!refusal(err)) throw err;
          writers.refused();
        }
      });
    },
    async check({ service }, stage) {
      const listed: string[] = [];
      for await (const c of service.listContainers()) listed.push(c.name);
      for (const name of containers.acked) assert.ok(listed.includes(name), `${stage}: acknowledged container ${name} is there`);
      for (const name of containers.refused) assert.ok(!listed.includes(name), `${stage}: refused container ${name} is not there`);
      const data = service.getContainerClient('full');
      for (const [name, version] of acked) {
        const blob = data.getBlockBlobClient(name);
        assert.equal(versionOf(name, await blob.downloadToBuffer()), version, `${stage}: ${name} is its last acknowledged version, v${version}`);
        assert.equal((await blob.getProperties()).metadata?.version, String(version));
        assert.ok(!refused.get(name)?.has(version), `${stage}: v${version} of ${name} was acknowledged, not refused`);
      }
    },
  });
});
