/**
 * Page blobs through the SDK's PageBlobClient: create, Put Page (update, clear, from a
 * URL), Get Page Ranges (whole, within a range, paged, and the diff against a snapshot),
 * resize, sequence numbers and their conditions, the 512-byte rules; raw HTTP where the
 * SDK does not let a request be wrong; and a restart, which keeps what was acknowledged.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { BlobSASPermissions, BlobServiceClient, ContainerSASPermissions, StorageSharedKeyCredential, type PageBlobClient } from '@azure/storage-blob';
import { startStorage } from '../../src/storage/server.ts';
import { DEVELOPMENT_KEY } from '../../src/storage/persistence/accounts.ts';
import { tempDataDir } from '../helpers/index.ts';

const credential = new StorageSharedKeyCredential('devstoreaccount1', DEVELOPMENT_KEY);

async function start(dataDir: string) {
  const storage = await startStorage({ dataDir, port: 0, httpsPort: 0, logLevel: 'silent' });
  const endpoint = storage.facts!.storage!.httpBlobEndpoint;
  return { storage, endpoint, service: new BlobServiceClient(endpoint, credential) };
}

/** The service error the SDK reports: its status and x-ms-error-code. */
function serviceError(status: number, code: string) {
  return (err: { statusCode?: number; code?: string }) => {
    assert.equal(err.statusCode, status);
    assert.equal(err.code, code);
    return true;
  };
}

/** A range as the SDK reports it: `{start, end}` when paged, `{offset: start, count: end - start}` from getPageRanges(Diff). */
type ReportedRange = { start: number; end: number } | { offset?: number; count?: number };

function pagesOf(response: { pageRange?: ReportedRange[]; clearRange?: ReportedRange[] }) {
  const pair = (r: ReportedRange): number[] => ('start' in r ? [r.start, r.end] : [r.offset!, r.offset! + r.count!]);
  return { written: (response.pageRange ?? []).map(pair), cleared: (response.clearRange ?? []).map(pair) };
}

const filled = (length: number, byte: number) => Buffer.alloc(length, byte);

async function download(blob: PageBlobClient, snapshot?: string): Promise<Buffer> {
  return (snapshot ? blob.withSnapshot(snapshot) : blob).downloadToBuffer();
}

test('page blobs: create, Put Page update/clear, Get Page Ranges, resize, sequence numbers, snapshots and diff, through PageBlobClient; kept across a restart', async (t) => {
  const dataDir = await tempDataDir(t);
  let { storage, endpoint, service } = await start(dataDir);
  t.after(() => storage.close());
  const container = service.getContainerClient('pages');
  await container.create();
  const blob = container.getPageBlobClient('disk.vhd');

  // Create: zeros of the given size, the sequence number given.
  await blob.create(4096, { blobSequenceNumber: 5, blobHTTPHeaders: { blobContentType: 'application/x-vhd' }, metadata: { kind: 'disk' } });
  let properties = await blob.getProperties();
  assert.equal(properties.blobType, 'PageBlob');
  assert.equal(properties.contentLength, 4096);
  assert.equal(properties.blobSequenceNumber, 5);
  assert.equal(properties.contentType, 'application/x-vhd');
  assert.deepEqual(properties.metadata, { kind: 'disk' });
  assert.deepEqual(await download(blob), Buffer.alloc(4096));
  assert.deepEqual(pagesOf(await blob.getPageRanges()).written, []);

  // Update pages; adjacent ranges merge; the answer carries the page MD5 and the sequence number.
  const written = await blob.uploadPages(filled(512, 0x61), 0, 512);
  assert.equal(written.blobSequenceNumber, 5);
  assert.ok(written.contentMD5, 'content-md5 of the pages');
  await blob.uploadPages(filled(1024, 0x62), 1024, 1024);
  await blob.uploadPages(filled(512, 0x63), 2048, 512);
  assert.deepEqual(pagesOf(await blob.getPageRanges()).written, [
    [0, 511],
    [1024, 2559],
  ]);
  assert.deepEqual(pagesOf(await blob.getPageRanges(1024, 1024)).written, [[1024, 2047]], 'ranges within the range asked for');
  let bytes = await download(blob);
  assert.deepEqual(bytes.subarray(0, 512), filled(512, 0x61));
  assert.deepEqual(bytes.subarray(512, 1024), Buffer.alloc(512));
  assert.deepEqual(bytes.subarray(1024, 2048), filled(1024, 0x62));
  assert.deepEqual(bytes.subarray(2048, 2560), filled(512, 0x63));
  const ranged = await blob.download(1024, 512);
  assert.equal(ranged.contentLength, 512);

  // Paged listing (maxresults/marker) gives every range once.
  const listed: number[][] = [];
  for await (const page of blob.listPageRanges().byPage({ maxPageSize: 1 })) listed.push(...pagesOf(page).written);
  assert.deepEqual(listed, [
    [0, 511],
    [1024, 2559],
  ]);

  // Clear: the pages read as zeros and leave the list.
  await blob.clearPages(1536, 512);
  assert.deepEqual(pagesOf(await blob.getPageRanges()).written, [
    [0, 511],
    [1024, 1535],
    [2048, 2559],
  ]);
  assert.deepEqual((await download(blob)).subarray(1536, 2048), Buffer.alloc(512));

  // The 512-byte rules and the blob's end.
  await assert.rejects(blob.uploadPages(filled(100, 1), 0, 100), serviceError(416, 'InvalidPageRange'));
  await assert.rejects(blob.uploadPages(filled(512, 1), 1, 512), serviceError(416, 'InvalidPageRange'));
  await assert.rejects(blob.uploadPages(filled(512, 1), 4096, 512), serviceError(416, 'InvalidPageRange'));
  await assert.rejects(blob.clearPages(0, 1000), serviceError(416, 'InvalidPageRange'));
  await assert.rejects(container.getPageBlobClient('odd').create(1000), serviceError(400, 'InvalidHeaderValue'));
  await assert.rejects(blob.resize(1000), serviceError(400, 'InvalidHeaderValue'));
  await assert.rejects(blob.uploadPages(filled(512, 1), 0, 512, { transactionalContentMD5: new Uint8Array(16) }), serviceError(400, 'Md5Mismatch'));

  // Sequence numbers: increment, max, update, and the conditions on writes.
  assert.equal((await blob.updateSequenceNumber('increment')).blobSequenceNumber, 6);
  assert.equal((await blob.updateSequenceNumber('max', 3)).blobSequenceNumber, 6);
  assert.equal((await blob.updateSequenceNumber('max', 9)).blobSequenceNumber, 9);
  assert.equal((await blob.updateSequenceNumber('update', 10)).blobSequenceNumber, 10);
  assert.equal((await blob.getProperties()).contentType, 'application/x-vhd', 'a sequence number change keeps the content headers');
  await assert.rejects(
    blob.uploadPages(filled(512, 1), 0, 512, { conditions: { ifSequenceNumberLessThan: 10 } }),
    serviceError(412, 'SequenceNumberConditionNotMet'),
  );
  await assert.rejects(
    blob.uploadPages(filled(512, 1), 0, 512, { conditions: { ifSequenceNumberLessThanOrEqualTo: 9 } }),
    serviceError(412, 'SequenceNumberConditionNotMet'),
  );
  await assert.rejects(blob.clearPages(0, 512, { conditions: { ifSequenceNumberEqualTo: 11 } }), serviceError(412, 'SequenceNumberConditionNotMet'));
  await blob.uploadPages(filled(512, 0x64), 0, 512, { conditions: { ifSequenceNumberEqualTo: 10, ifSequenceNumberLessThan: 11 } });
  await assert.rejects(blob.uploadPages(filled(512, 1), 0, 512, { conditions: { ifMatch: '"0x1"' } }), serviceError(412, 'ConditionNotMet'));

  // A snapshot keeps its bytes while the blob changes; the diff names what changed since.
  const { snapshot } = await blob.createSnapshot();
  assert.ok(snapshot);
  await blob.uploadPages(filled(512, 0x65), 512, 512);
  await blob.uploadPages(filled(512, 0x62), 1024, 512); // the same bytes again: unchanged
  await blob.uploadPages(filled(512, 0x66), 1536, 512);
  await blob.clearPages(2048, 512);
  const diff = pagesOf(await blob.getPageRangesDiff(0, 4096, snapshot));
  assert.deepEqual(diff.written, [
    [512, 511 + 512],
    [1536, 2047],
  ]);
  assert.deepEqual(diff.cleared, [[2048, 2559]]);
  await assert.rejects(blob.getPageRangesDiff(0, 4096, '2001-01-01T00:00:00.0000000Z'), serviceError(409, 'PreviousSnapshotNotFound'));
  const before = await download(blob, snapshot);
  assert.deepEqual(before.subarray(512, 1024), Buffer.alloc(512), 'the snapshot does not see later writes');
  assert.deepEqual(before.subarray(2048, 2560), filled(512, 0x63));
  assert.deepEqual(pagesOf(await blob.withSnapshot(snapshot).getPageRanges()).written, [
    [0, 511],
    [1024, 1535],
    [2048, 2559],
  ]);

  // Resize: pages past the new end go; growing adds zeros.
  await blob.resize(1024);
  properties = await blob.getProperties();
  assert.equal(properties.contentLength, 1024);
  assert.equal(properties.contentType, 'application/x-vhd', 'a resize keeps the content headers');
  assert.deepEqual(pagesOf(await blob.getPageRanges()).written, [[0, 1023]]);
  await blob.resize(8192);
  bytes = await download(blob);
  assert.equal(bytes.length, 8192);
  assert.deepEqual(bytes.subarray(1024), Buffer.alloc(8192 - 1024));

  // Put Page From URL: pages from a range of another blob (read with its SAS).
  const source = container.getBlockBlobClient('source.bin');
  await source.uploadData(Buffer.concat([filled(512, 0x71), filled(512, 0x72)]));
  const sourceUrl = await source.generateSasUrl({ permissions: BlobSASPermissions.parse('r'), expiresOn: new Date(Date.now() + 600_000) });
  await blob.uploadPagesFromURL(sourceUrl, 512, 4096, 512);
  assert.deepEqual((await download(blob)).subarray(4096, 4608), filled(512, 0x72));

  // Listings, and operations of other blob types.
  for await (const item of container.listBlobsFlat()) {
    if (item.name !== 'disk.vhd') continue;
    assert.equal(item.properties.blobType, 'PageBlob');
    assert.equal(item.properties.blobSequenceNumber, 10);
    assert.equal(item.properties.contentLength, 8192);
  }
  await assert.rejects(container.getPageBlobClient('source.bin').uploadPages(filled(512, 1), 0, 512), serviceError(409, 'InvalidBlobType'));
  await assert.rejects(container.getPageBlobClient('source.bin').getPageRanges(), serviceError(409, 'InvalidBlobType'));
  await assert.rejects(container.getPageBlobClient('source.bin').resize(512), serviceError(409, 'InvalidBlobType'));

  // A lease guards page writes.
  const lease = blob.getBlobLeaseClient();
  await lease.acquireLease(-1);
  await assert.rejects(blob.uploadPages(filled(512, 1), 0, 512), serviceError(412, 'LeaseIdMissing'));
  await blob.uploadPages(filled(512, 0x67), 0, 512, { conditions: { leaseId: lease.leaseId } });
  await lease.releaseLease();

  // What was acknowledged is there after a restart.
  const expected = await download(blob);
  await storage.close();
  ({ storage, endpoint, service } = await start(dataDir));
  const again = service.getContainerClient('pages').getPageBlobClient('disk.vhd');
  assert.deepEqual(await download(again), expected);
  assert.equal((await again.getProperties()).blobSequenceNumber, 10);
  assert.deepEqual(pagesOf(await again.getPageRanges()).written, [
    [0, 1023],
    [4096, 4607],
  ]);
  assert.deepEqual((await download(again, snapshot)).subarray(2048, 2560), filled(512, 0x63));
  assert.ok(endpoint);
});

test('page blobs, raw: wrong headers, ranges and bodies get the service errors; the blob keeps its bytes and the server keeps serving', async (t) => {
  const dataDir = await tempDataDir(t);
  const { storage, endpoint, service } = await start(dataDir);
  t.after(() => storage.close());
  const container = service.getContainerClient('raw');
  await container.create();
  const blob = container.getPageBlobClient('p');
  await blob.create(16 * 1024 * 1024);
  await blob.uploadPages(filled(512, 0x41), 0, 512);
  const kept = await download(blob);
  const sas = await container.generateSasUrl({ permissions: ContainerSASPermissions.parse('racwd'), expiresOn: new Date(Date.now() + 600_000) });
  const query = new URL(sas).search;
  const send = async (name: string, extra: string, headers: Record<string, string>, body: string | Buffer = '') => {
    const answer = await request(`${endpoint}/raw/${name}${query}${extra}`, { method: 'PUT', headers: { 'x-ms-version': '2026-04-06', ...headers }, body });
    const text = await answer.body.text();
    return { status: answer.statusCode, code: answer.headers['x-ms-error-code'], text };
  };
  const cases: [string, string, Record<string, string>, string | Buffer, number, string][] = [
    ['new', '', { 'x-ms-blob-type': 'PageBlob' }, '', 400, 'MissingRequiredHeader'],
    ['new', '', { 'x-ms-blob-type': 'PageBlob', 'x-ms-blob-content-length': 'abc' }, '', 400, 'InvalidHeaderValue'],
    ['new', '', { 'x-ms-blob-type': 'PageBlob', 'x-ms-blob-content-length': '-512' }, '', 400, 'InvalidHeaderValue'],
    ['new', '', { 'x-ms-blob-type': 'PageBlob', 'x-ms-blob-content-length': String(16 * 1024 ** 4) }, '', 400, 'InvalidHeaderValue'],
    ['new', '', { 'x-ms-blob-type': 'PageBlob', 'x-ms-blob-content-length': '512' }, 'a body', 400, 'InvalidHeaderValue'],
    ['new', '', { 'x-ms-blob-type': 'PageBlob', 'x-ms-blob-content-length': '512', 'x-ms-blob-sequence-number': '-1' }, '', 400, 'InvalidHeaderValue'],
    ['p', '&comp=page', { 'x-ms-range': 'bytes=0-511' }, filled(512, 1), 400, 'MissingRequiredHeader'],
    ['p', '&comp=page', { 'x-ms-page-write': 'bogus', 'x-ms-range': 'bytes=0-511' }, filled(512, 1), 400, 'InvalidHeaderValue'],
    ['p', '&comp=page', { 'x-ms-page-write': 'update' }, filled(512, 1), 400, 'MissingRequiredHeader'],
    ['p', '&comp=page', { 'x-ms-page-write': 'update', 'x-ms-range': 'bytes=0-' }, filled(512, 1), 400, 'InvalidHeaderValue'],
    ['p', '&comp=page', { 'x-ms-page-write': 'update', 'x-ms-range': 'bytes=abc' }, filled(512, 1), 400, 'InvalidHeaderValue'],
    ['p', '&comp=page', { 'x-ms-page-write': 'update', 'x-ms-range': 'bytes=511-0' }, filled(512, 1), 416, 'InvalidPageRange'],
    ['p', '&comp=page', { 'x-ms-page-write': 'update', 'x-ms-range': 'bytes=0-511' }, filled(1024, 1), 400, 'InvalidHeaderValue'],
    ['p', '&comp=page', { 'x-ms-page-write': 'update', 'x-ms-range': 'bytes=0-1023' }, filled(512, 1), 400, 'InvalidHeaderValue'],
    ['p', '&comp=page', { 'x-ms-page-write': 'update', 'x-ms-range': `bytes=0-${8 * 1024 * 1024 - 1}` }, filled(512, 1), 413, 'RequestBodyTooLarge'],
    ['p', '&comp=page', { 'x-ms-page-write': 'clear', 'x-ms-range': 'bytes=0-511' }, filled(512, 1), 400, 'InvalidHeaderValue'],
    [
      'p',
      '&comp=page',
      { 'x-ms-page-write': 'update', 'x-ms-range': 'bytes=0-511', 'x-ms-if-sequence-number-lt': 'x' },
      filled(512, 1),
      400,
      'InvalidHeaderValue',
    ],
    ['nosuch', '&comp=page', { 'x-ms-page-write': 'update', 'x-ms-range': 'bytes=0-511' }, filled(512, 1), 404, 'BlobNotFound'],
    ['p', '&comp=properties', { 'x-ms-sequence-number-action': 'sideways' }, '', 400, 'InvalidHeaderValue'],
    ['p', '&comp=properties', { 'x-ms-sequence-number-action': 'update' }, '', 400, 'MissingRequiredHeader'],
    ['p', '&comp=properties', { 'x-ms-sequence-number-action': 'increment', 'x-ms-blob-sequence-number': '3' }, '', 400, 'InvalidHeaderValue'],
  ];
  for (const [name, extra, headers, body, status, code] of cases) {
    const answer = await send(name, extra, headers, body);
    const context = `${name}${extra} ${JSON.stringify(headers)}`;
    assert.equal(answer.status, status, `${context}: ${answer.text}`);
    assert.equal(answer.code, code, context);
    assert.match(answer.text, new RegExp(`<Code>${code}</Code>`), context);
  }
  const pages = await request(`${endpoint}/raw/p${query}&comp=pagelist&marker=abc`, { headers: { 'x-ms-version': '2026-04-06' } });
  assert.equal(pages.statusCode, 400);
  await pages.body.dump();
  assert.deepEqual(await download(blob), kept, 'no refused write changed the blob');
  assert.equal((await blob.getProperties()).blobSequenceNumber, 0);
});
