import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { BlobIndex } from '../../src/storage/persistence/blob-index.ts';
import type { BlobRecord } from '../../src/storage/persistence/store.ts';
import { tempDataDir } from '../helpers/index.ts';
import { smallDisk } from '../helpers/small-disk.ts';

function record(name: string, metadataBytes = 0): BlobRecord {
  const now = Date.now();
  return {
    name,
    file: `file-of-${name}`,
    size: 1,
    md5: 'AAAAAAAAAAAAAAAAAAAAAA==',
    created: now,
    modified: now,
    etag: `"0x${now.toString(16)}"`,
    metadata: metadataBytes ? { padding: 'x'.repeat(metadataBytes) } : {},
    contentType: 'application/octet-stream',
  };
}

const names = (index: BlobIndex) => [...index.blobs.keys()].sort();
const lineLength = (r: BlobRecord) => Buffer.byteLength(JSON.stringify({ put: r }) + '\n');

test('the blob index on its own keeps every change of overlapping appends, in the order they were asked for', async (t) => {
  const dir = await tempDataDir(t);
  const index = BlobIndex.create(dir, 1_000_000);
  // None awaited before the next starts: each would write at the same log offset if the index did not order them.
  await Promise.all([
    index.put(record('a')),
    index.put(record('b')),
    index.delete('a'),
    index.put(record('c')),
    ...Array.from({ length: 20 }, (_, i) => index.put(record(`many-${String(i).padStart(2, '0')}`))),
  ]);
  const expected = ['b', 'c', ...Array.from({ length: 20 }, (_, i) => `many-${String(i).padStart(2, '0')}`)];
  assert.deepEqual(names(index), expected);
  assert.deepEqual(names(await BlobIndex.load(dir, 1_000_000)), expected, 'the same after loading from disk');
});

test('the blob index compacts between overlapping appends without losing one', async (t) => {
  const dir = await tempDataDir(t);
  const index = BlobIndex.create(dir, 1);
  await Promise.all(Array.from({ length: 30 }, (_, i) => [index.put(record(`n${i}`)), index.compactIfDue()]).flat());
  assert.equal(index.blobs.size, 30);
  assert.equal((await BlobIndex.load(dir, 1)).blobs.size, 30, 'all 30 after loading');
});

test('on a full disk the blob index refuses a change it could not write whole, keeps it out of memory and the log, and takes changes again once space returns', async (t) => {
  const disk = await smallDisk(t, 1024 * 1024);
  const dir = join(disk.path, 'container');
  await mkdir(dir);
  const index = BlobIndex.create(dir, 1_000_000);
  // A first line that leaves 100 bytes of the log's first page free.
  const long = 'b'.repeat(1000);
  const first = record(long, 1);
  first.metadata.padding = 'x'.repeat(4096 - 100 - lineLength(first) + 1);
  assert.equal(lineLength(first), 4096 - 100);
  await index.put(first);
  await disk.fill();

  // Each change below is longer than the page's free end: part of it is written, then ENOSPC.
  await assert.rejects(index.put(record('refused', 1000)), (err: NodeJS.ErrnoException) => err.code === 'ENOSPC');
  assert.deepEqual(names(index), [long], 'a refused put is not in memory');
  await assert.rejects(index.delete(long), (err: NodeJS.ErrnoException) => err.code === 'ENOSPC');
  assert.deepEqual(names(index), [long], 'a refused delete leaves the blob');
  assert.equal((await stat(join(dir, 'blobs.log'))).size, 4096 - 100, 'the log holds the acknowledged line only');

  await disk.free();
  await index.put(record('after'));
  const log = await readFile(join(dir, 'blobs.log'), 'utf8');
  assert.ok(!log.includes('\0'), 'no gap of NULs where a refused line was');
  assert.deepEqual(names(await BlobIndex.load(dir, 1_000_000)), ['after', long], 'what was acknowledged after space returned is on disk');
});
