/**
 * Copies of page and append blobs: Copy Blob keeps the source's blob type (a page blob's
 * pages, size and sequence number; an append blob's committed blocks), from disk or through
 * a SAS URL; and Incremental Copy Blob of page blob snapshots through
 * PageBlobClient.startCopyIncremental: the destination's snapshots, the order of copies, the
 * service's errors, the operations an incremental copy blob refuses, and a restart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'undici';
import { BlobSASPermissions, BlobServiceClient, type ContainerClient, type PageBlobClient } from '@azure/storage-blob';
import { startStorage } from '../../src/storage/server.ts';
import { developmentCredential, startSharedKeyStorage } from './helpers.ts';

const MB = 1024 * 1024;
const filled = (length: number, byte: number) => Buffer.alloc(length, byte);

function serviceError(status: number, code: string) {
  return (err: { statusCode?: number; code?: string }) => {
    assert.equal(err.statusCode, status);
    assert.equal(err.code, code);
    return true;
  };
}

/** Written pages as `[start, end]` pairs, however the SDK reports them. */
async function writtenPages(blob: PageBlobClient): Promise<number[][]> {
  const answer = await blob.getPageRanges();
  return (answer.pageRange ?? []).map((r) => {
    const range = r as { start?: number; end?: number; offset?: number; count?: number };
    return range.start !== undefined ? [range.start, range.end!] : [range.offset!, range.offset! + range.count!];
  });
}

/** A page blob with two written pages far apart, its sequence number and properties set. */
async function sparsePageBlob(container: ContainerClient, name: string, size: number): Promise<PageBlobClient> {
  const blob = container.getPageBlobClient(name);
  await blob.create(size, { blobSequenceNumber: 7, blobHTTPHeaders: { blobContentType: 'application/x-vhd' }, metadata: { disk: 'os' } });
  await blob.uploadPages(filled(512, 0x61), 0, 512);
  await blob.uploadPages(filled(1024, 0x62), size - 1024, 1024);
  return blob;
}

/** Bytes the data files of a container take on disk (allocated blocks, not their lengths). */
async function allocatedBytes(dataDir: string, container: string): Promise<number> {
  const dir = join(dataDir, 'storage', 'accounts', 'devstoreaccount1', container, 'data');
  let total = 0;
  for (const file of await readdir(dir)) total += (await stat(join(dir, file))).blocks * 512;
  return total;
}

test('Copy Blob keeps the blob type: a page blob is copied page by page (size, pages, bytes, sequence number; sparse on disk), from disk and through a SAS URL; an append blob keeps its blocks and takes appends', async (t) => {
  const { service, dataDir } = await startSharedKeyStorage(t);
  const source = service.getContainerClient('disks');
  await source.create();
  const copies = service.getContainerClient('copies');
  await copies.create();
  const size = 1024 * MB;
  const disk = await sparsePageBlob(source, 'disk.vhd', size);
  const expected = [
    [0, 511],
    [size - 1024, size - 1],
  ];

  // Within the account with the caller's own key: read from disk, only written pages copied.
  const copy = copies.getPageBlobClient('from-disk.vhd');
  const poller = await copy.beginCopyFromURL(disk.url);
  assert.equal((await poller.pollUntilDone()).copyStatus, 'success');
  const properties = await copy.getProperties();
  assert.equal(properties.blobType, 'PageBlob');
  assert.equal(properties.contentLength, size);
  assert.equal(properties.blobSequenceNumber, 7);
  assert.equal(properties.contentType, 'application/x-vhd');
  assert.deepEqual(properties.metadata, { disk: 'os' });
  assert.equal(properties.copyStatus, 'success');
  assert.equal(properties.accessTier, undefined, 'page blobs carry no block blob tier');
  assert.deepEqual(await writtenPages(copy), expected);
  assert.deepEqual(await copy.downloadToBuffer(0, 512), filled(512, 0x61));
  assert.deepEqual(await copy.downloadToBuffer(size - 1536, 1536), Buffer.concat([Buffer.alloc(512), filled(1024, 0x62)]));
  assert.ok((await allocatedBytes(dataDir, 'copies')) < 16 * MB, 'a 1 GiB page blob with two written pages copies as a sparse file');
  // The copy is a page blob like any other: Put Page works on it, and the source is untouched.
  await copy.uploadPages(filled(512, 0x63), 512, 512);
  assert.deepEqual(await writtenPages(copy), [[0, 1023], expected[1]]);
  assert.deepEqual(await writtenPages(disk), expected);

  // Through a SAS URL (fetched over HTTP): the type, the sequence number and the non-zero pages arrive.
  const small = await sparsePageBlob(source, 'small.vhd', 4 * MB);
  const sasUrl = await small.generateSasUrl({ permissions: BlobSASPermissions.parse('r'), expiresOn: new Date(Date.now() + 600_000) });
  const remote = copies.getPageBlobClient('from-url.vhd');
  await (await remote.beginCopyFromURL(sasUrl)).pollUntilDone();
  const remoteProperties = await remote.getProperties();
  assert.equal(remoteProperties.blobType, 'PageBlob');
  assert.equal(remoteProperties.blobSequenceNumber, 7);
  assert.deepEqual(await writtenPages(remote), [
    [0, 511],
    [4 * MB - 1024, 4 * MB - 1],
  ]);
  assert.deepEqual(await remote.downloadToBuffer(), await small.downloadToBuffer());

  // An append blob stays an append blob with its committed block count, and takes appends.
  const log = source.getAppendBlobClient('log');
  await log.create();
  await log.appendBlock('one\n', 4);
  await log.appendBlock('two\n', 4);
  const logCopy = copies.getAppendBlobClient('log-copy');
  await (await logCopy.beginCopyFromURL(log.url)).pollUntilDone();
  let logProperties = await logCopy.getProperties();
  assert.equal(logProperties.blobType, 'AppendBlob');
  assert.equal(logProperties.blobCommittedBlockCount, 2);
  await logCopy.appendBlock('three\n', 6);
  logProperties = await logCopy.getProperties();
  assert.equal(logProperties.blobCommittedBlockCount, 3);
  assert.equal((await logCopy.downloadToBuffer()).toString(), 'one\ntwo\nthree\n');

  // Copy Blob From URL (synchronous) still makes a block blob, as before.
  const block = source.getBlockBlobClient('plain.txt');
  await block.upload('plain', 5);
  const synced = copies.getBlockBlobClient('plain-copy.txt');
  assert.equal((await synced.syncCopyFromURL(block.url)).copyStatus, 'success');
  assert.equal((await synced.getProperties()).blobType, 'BlockBlob');
});

test('Incremental Copy Blob: snapshots of a page blob copied in order, each leaving a destination snapshot equal to it; the service errors; only properties, delete and further incremental copies on the destination; kept across a restart', async (t) => {
  const { service, dataDir, storage } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('backup');
  await container.create();
  const disk = await sparsePageBlob(container, 'disk.vhd', 8 * MB);
  const first = (await disk.createSnapshot()).snapshot!;
  const firstBytes = await disk.withSnapshot(first).downloadToBuffer();
  const backup = container.getPageBlobClient('disk-backup.vhd');

  // The first copy: the whole snapshot, and a snapshot of the destination holding it.
  const started = await backup.startCopyIncremental(disk.withSnapshot(first).url);
  assert.equal(started.copyStatus, 'success');
  assert.ok(started.copyId);
  let properties = await backup.getProperties();
  assert.equal(properties.isIncrementalCopy, true);
  assert.equal(properties.blobType, 'PageBlob');
  assert.equal(properties.contentLength, 8 * MB);
  assert.equal(properties.copyStatus, 'success');
  assert.equal(properties.copySource, disk.withSnapshot(first).url);
  const backupFirst = properties.destinationSnapshot!;
  assert.ok(backupFirst, 'x-ms-copy-destination-snapshot');
  assert.deepEqual(await backup.withSnapshot(backupFirst).downloadToBuffer(), firstBytes);
  assert.deepEqual(await writtenPages(backup.withSnapshot(backupFirst)), await writtenPages(disk.withSnapshot(first)));

  // Later changes reach the destination with the next snapshot; the earlier destination snapshot keeps its bytes.
  await disk.uploadPages(filled(512, 0x7a), 4096, 512);
  await disk.clearPages(0, 512);
  await disk.resize(12 * MB);
  const second = (await disk.createSnapshot()).snapshot!;
  await backup.startCopyIncremental(disk.withSnapshot(second).url);
  properties = await backup.getProperties();
  const backupSecond = properties.destinationSnapshot!;
  assert.ok(backupSecond > backupFirst);
  assert.equal(properties.contentLength, 12 * MB);
  assert.deepEqual(await backup.withSnapshot(backupSecond).downloadToBuffer(), await disk.withSnapshot(second).downloadToBuffer());
  assert.deepEqual(await backup.withSnapshot(backupFirst).downloadToBuffer(), firstBytes);
  const diff = await backup.withSnapshot(backupSecond).getPageRangesDiff(0, 12 * MB, backupFirst);
  const pairs = (ranges: { offset?: number; count?: number }[] = []) => ranges.map((r) => [r.offset!, r.offset! + r.count!]);
  assert.deepEqual(pairs(diff.pageRange), [[4096, 4607]], 'the page written since');
  assert.deepEqual(pairs(diff.clearRange), [[0, 511]], 'the page cleared since');

  // The listing marks it.
  const listed = [];
  for await (const item of container.listBlobsFlat({ includeCopy: true, includeSnapshots: true, prefix: 'disk-backup' })) listed.push(item);
  const base = listed.find((item) => !item.snapshot)!;
  assert.equal(base.properties.incrementalCopy, true);
  assert.equal(base.properties.destinationSnapshot, backupSecond);
  assert.deepEqual(
    listed.filter((item) => item.snapshot).map((item) => item.snapshot),
    [backupFirst, backupSecond],
  );

  // Errors, each as the service names it; none changes the destination.
  await assert.rejects(backup.startCopyIncremental(disk.withSnapshot(first).url), serviceError(409, 'IncrementalCopyOfEarlierSnapshotNotAllowed'));
  await assert.rejects(backup.startCopyIncremental(disk.url), serviceError(409, 'IncrementalCopySourceMustBeSnapshot'));
  const other = await sparsePageBlob(container, 'other.vhd', MB);
  const otherSnapshot = (await other.createSnapshot()).snapshot!;
  await assert.rejects(backup.startCopyIncremental(other.withSnapshot(otherSnapshot).url), serviceError(409, 'IncrementalCopyBlobMismatch'));
  await assert.rejects(other.startCopyIncremental(disk.withSnapshot(second).url), serviceError(409, 'IncrementalCopyBlobMismatch'), 'a blob not made by one');
  const text = container.getBlockBlobClient('notes.txt');
  await text.upload('notes', 5);
  const textSnapshot = (await text.createSnapshot()).snapshot!;
  await assert.rejects(
    container.getPageBlobClient('from-block').startCopyIncremental(text.withSnapshot(textSnapshot).url),
    serviceError(409, 'InvalidSourceBlobType'),
  );
  await assert.rejects(
    container.getPageBlobClient('nothing').startCopyIncremental(`${disk.url}?snapshot=2020-01-01T00:00:00.0000000Z`),
    (err: { statusCode?: number }) => {
      assert.equal(err.statusCode, 404);
      return true;
    },
  );
  assert.equal(await container.getPageBlobClient('from-block').exists(), false);

  // The destination itself takes only Get Blob Properties, Incremental Copy Blob and Delete Blob.
  const refused = serviceError(409, 'OperationNotAllowedOnIncrementalCopyBlob');
  await assert.rejects(backup.download(), refused);
  await assert.rejects(backup.uploadPages(filled(512, 1), 0, 512), refused);
  await assert.rejects(backup.setMetadata({ a: 'b' }), refused);
  await assert.rejects(backup.createSnapshot(), refused);
  await assert.rejects(backup.getPageRanges(), refused);
  await assert.rejects(backup.setHTTPHeaders({ blobContentType: 'text/plain' }), refused);
  await assert.rejects(container.getPageBlobClient('copy-of-backup').beginCopyFromURL(backup.url), refused);
  await assert.rejects(container.getBlockBlobClient('disk-backup.vhd').upload('x', 1), refused);
  assert.equal((await backup.getProperties()).destinationSnapshot, backupSecond);

  // Its snapshots are ordinary page blob snapshots: they can be copied out.
  const restored = container.getPageBlobClient('restored.vhd');
  await (await restored.beginCopyFromURL(backup.withSnapshot(backupFirst).url)).pollUntilDone();
  assert.deepEqual(await restored.downloadToBuffer(), firstBytes);
  assert.equal((await restored.getProperties()).isIncrementalCopy, undefined);

  // Raw: no source, a source that is no URL; the server keeps serving.
  const raw = async (headers: Record<string, string>) => {
    const sas = await backup.generateSasUrl({ permissions: BlobSASPermissions.parse('racwd'), expiresOn: new Date(Date.now() + 600_000) });
    const answer = await request(`${sas}&comp=incrementalcopy`, { method: 'PUT', headers: { 'x-ms-version': '2026-04-06', ...headers } });
    await answer.body.dump();
    return [answer.statusCode, answer.headers['x-ms-error-code']];
  };
  assert.deepEqual(await raw({}), [400, 'MissingRequiredHeader']);
  assert.deepEqual(await raw({ 'x-ms-copy-source': 'not a url' }), [400, 'InvalidHeaderValue']);
  assert.deepEqual(await raw({ 'x-ms-copy-source': 'ftp://x/y?snapshot=a' }), [400, 'InvalidHeaderValue']);

  // A restart keeps the destination, its snapshots and what it refuses.
  await storage.close();
  const again = await startStorage({ dataDir, host: '127.0.0.1', port: 0, httpsPort: 0, logLevel: 'silent' });
  t.after(() => again.close());
  const client = new BlobServiceClient(again.facts!.storage!.httpBlobEndpoint, developmentCredential)
    .getContainerClient('backup')
    .getPageBlobClient('disk-backup.vhd');
  properties = await client.getProperties();
  assert.equal(properties.isIncrementalCopy, true);
  assert.equal(properties.destinationSnapshot, backupSecond);
  assert.deepEqual(await client.withSnapshot(backupFirst).downloadToBuffer(), firstBytes);
  await assert.rejects(client.download(), refused);

  // Delete Blob removes it with its snapshots.
  await client.delete({ deleteSnapshots: 'include' });
  assert.equal(await client.exists(), false);
});
