/**
 * The Blob API beyond upload and download, through the official SDK (raw HTTP where the
 * SDK hides the wire): block lists, conditional headers on every operation, metadata and
 * properties, checksums, snapshots, tiers, append blobs, error details.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { BlobServiceClient, ContainerSASPermissions, type ContainerClient, type RestError } from '@azure/storage-blob';
import { developmentCredential, startSharedKeyStorage } from './helpers.ts';

const refusedWith = (statusCode: number, code: string) => (err: RestError) => {
  assert.equal(err.statusCode, statusCode, err.message);
  assert.equal(err.code, code, err.message);
  return true;
};

const id = (text: string) => Buffer.from(text.padEnd(8, '-')).toString('base64');

test('Get Block List: committed, uncommitted and all, with sizes; a blob of neither is 404', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('blocks');
  await container.create();
  const blob = container.getBlockBlobClient('built.bin');
  await blob.stageBlock(id('a'), 'aaaa', 4);
  await blob.stageBlock(id('b'), 'bbbbbb', 6);
  const staged = await blob.getBlockList('all');
  assert.deepEqual(staged.committedBlocks ?? [], []);
  assert.deepEqual(
    staged.uncommittedBlocks?.map((b) => [b.name, b.size]),
    [
      [id('a'), 4],
      [id('b'), 6],
    ],
  );
  await blob.commitBlockList([id('b'), id('a')]);
  await blob.stageBlock(id('c'), 'cc', 2);
  const committed = await blob.getBlockList('committed');
  assert.deepEqual(
    committed.committedBlocks?.map((b) => [b.name, b.size]),
    [
      [id('b'), 6],
      [id('a'), 4],
    ],
  );
  assert.equal(committed.blobContentLength, 10);
  assert.deepEqual(
    (await blob.getBlockList('uncommitted')).uncommittedBlocks?.map((b) => b.name),
    [id('c')],
  );
  assert.equal((await blob.downloadToBuffer()).toString(), 'bbbbbbaaaa');
  await assert.rejects(container.getBlockBlobClient('none').getBlockList('all'), refusedWith(404, 'BlobNotFound'));
});

test('conditional headers: Delete Blob honours If-Match / If-None-Match / If-(Un)Modified-Since; reads answer 304 and 412', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('conditions');
  await container.create();
  const blob = container.getBlockBlobClient('kept.txt');
  const written = await blob.upload('kept', 4);
  const past = new Date(Date.now() - 3_600_000);
  const future = new Date(Date.now() + 3_600_000);
  await assert.rejects(blob.delete({ conditions: { ifMatch: '"0x1"' } }), refusedWith(412, 'ConditionNotMet'));
  await assert.rejects(blob.delete({ conditions: { ifNoneMatch: written.etag! } }), refusedWith(412, 'ConditionNotMet'));
  await assert.rejects(blob.delete({ conditions: { ifModifiedSince: future } }), refusedWith(412, 'ConditionNotMet'));
  await assert.rejects(blob.delete({ conditions: { ifUnmodifiedSince: past } }), refusedWith(412, 'ConditionNotMet'));
  assert.equal((await blob.downloadToBuffer()).toString(), 'kept', 'a delete whose condition failed deletes nothing');

  // Reads: If-Modified-Since in the future → 304; If-Unmodified-Since in the past → 412.
  await assert.rejects(blob.download(0, undefined, { conditions: { ifModifiedSince: future } }), (err: RestError) => err.statusCode === 304);
  await assert.rejects(blob.download(0, undefined, { conditions: { ifUnmodifiedSince: past } }), refusedWith(412, 'ConditionNotMet'));
  assert.equal((await blob.download(0, undefined, { conditions: { ifModifiedSince: past } }))._response.status, 200);
  // Set Blob Metadata and Set Blob Properties take them too.
  await assert.rejects(blob.setMetadata({ a: 'b' }, { conditions: { ifMatch: '"0x1"' } }), refusedWith(412, 'ConditionNotMet'));
  await assert.rejects(blob.setHTTPHeaders({ blobContentType: 'text/x' }, { conditions: { ifUnmodifiedSince: past } }), refusedWith(412, 'ConditionNotMet'));
  await blob.delete({ conditions: { ifMatch: written.etag!, ifUnmodifiedSince: future } });
  assert.equal(await blob.exists(), false);
});

test('Set/Get Blob Metadata, Set Blob Properties (content headers replaced as a set), Set Container Metadata; bad names → 400 InvalidMetadata', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('metadata');
  await container.create({ metadata: { first: '1' } });
  const blob = container.getBlockBlobClient('doc.txt');
  const created = await blob.upload('text', 4, { blobHTTPHeaders: { blobContentType: 'text/plain', blobContentLanguage: 'en' } });
  const set = await blob.setMetadata({ Owner: 'ada', purpose: 'test' });
  assert.notEqual(set.etag, created.etag, 'metadata changes the ETag');
  const properties = await blob.getProperties();
  assert.deepEqual(properties.metadata, { owner: 'ada', purpose: 'test' });
  await blob.setHTTPHeaders({ blobContentType: 'text/markdown', blobCacheControl: 'no-store' });
  const after = await blob.getProperties();
  assert.equal(after.contentType, 'text/markdown');
  assert.equal(after.cacheControl, 'no-store');
  assert.equal(after.contentLanguage, undefined, 'a content header not given is cleared');
  assert.deepEqual(after.metadata, { owner: 'ada', purpose: 'test' });
  assert.equal((await blob.downloadToBuffer()).toString(), 'text', 'the content is untouched');

  await container.setMetadata({ second: '2' });
  assert.deepEqual((await container.getProperties()).metadata, { second: '2' });
  await assert.rejects(blob.setMetadata({ 'not-an-identifier': 'x' }), refusedWith(400, 'InvalidMetadata'));
  await assert.rejects(container.setMetadata({ '1abc': 'x' }), refusedWith(400, 'InvalidMetadata'));
  await assert.rejects(container.getBlockBlobClient('new.txt').upload('x', 1, { metadata: { 'a-b': 'x' } }), refusedWith(400, 'InvalidMetadata'));
  await assert.rejects(container.getBlockBlobClient('missing').setMetadata({ a: 'b' }), refusedWith(404, 'BlobNotFound'));
});

test('listings carry the blob ETag bare (the container listing quotes it), tier and lease elements, snapshots with include=snapshots', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('listing');
  await container.create();
  const blob = container.getBlockBlobClient('a.txt');
  const written = await blob.upload('one', 3);
  const snapshot = await blob.createSnapshot();
  await blob.upload('two!', 4);
  const answer = await fetch(`${container.url}?restype=container&comp=list&include=snapshots&${await sasFor(container)}`);
  const body = await answer.text();
  assert.match(body, new RegExp(`<Etag>${written.etag!.replace(/"/g, '')}</Etag>`), 'bare ETag in the listing');
  const items: { name: string; snapshot?: string; size?: number }[] = [];
  for await (const item of container.listBlobsFlat({ includeSnapshots: true }))
    items.push({ name: item.name, snapshot: item.snapshot, size: item.properties.contentLength });
  assert.deepEqual(items, [
    { name: 'a.txt', snapshot: snapshot.snapshot, size: 3 },
    { name: 'a.txt', snapshot: undefined, size: 4 },
  ]);
  for await (const item of container.listBlobsFlat()) {
    assert.equal(item.properties.accessTier, 'Hot');
    assert.equal(item.properties.leaseState, 'available');
  }
});

async function sasFor(container: ContainerClient): Promise<string> {
  const url = await container.generateSasUrl({ permissions: ContainerSASPermissions.parse('rl'), expiresOn: new Date(Date.now() + 600_000) });
  return new URL(url).search.slice(1);
}

test('checksums: Content-MD5 on Put Block and x-ms-blob-content-md5 on Put Blob are checked (400 Md5Mismatch); x-ms-range-get-content-md5', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('checksums');
  await container.create();
  const blob = container.getBlockBlobClient('x.bin');
  const wrong = createHash('md5').update('other').digest();
  await assert.rejects(blob.stageBlock(id('a'), 'data', 4, { transactionalContentMD5: wrong }), refusedWith(400, 'Md5Mismatch'));
  assert.deepEqual((await blob.getBlockList('all').catch(() => ({ uncommittedBlocks: [] }))).uncommittedBlocks ?? [], [], 'the refused block was not staged');
  await blob.stageBlock(id('a'), 'data', 4, { transactionalContentMD5: createHash('md5').update('data').digest() });
  await assert.rejects(blob.upload('data', 4, { blobHTTPHeaders: { blobContentMD5: wrong } }), refusedWith(400, 'Md5Mismatch'));
  await blob.upload('data', 4, { blobHTTPHeaders: { blobContentMD5: createHash('md5').update('data').digest() } });
  const ranged = await blob.download(1, 2, { rangeGetContentMD5: true });
  assert.deepEqual(ranged.contentMD5, createHash('md5').update('at').digest());
});

test('snapshots: create, read, delete one; Delete Blob with snapshots needs x-ms-delete-snapshots (409 SnapshotsPresent)', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('snapshots');
  await container.create();
  const blob = container.getBlockBlobClient('v.txt');
  await blob.upload('version one', 11, { metadata: { v: '1' } });
  const first = await blob.createSnapshot();
  await blob.upload('version two', 11);
  const second = await blob.createSnapshot({ metadata: { v: 'snap' } });
  assert.ok(second.snapshot! > first.snapshot!);
  assert.match(first.snapshot!, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{7}Z$/);
  assert.equal((await blob.withSnapshot(first.snapshot!).downloadToBuffer()).toString(), 'version one');
  assert.deepEqual((await blob.withSnapshot(first.snapshot!).getProperties()).metadata, { v: '1' });
  assert.deepEqual((await blob.withSnapshot(second.snapshot!).getProperties()).metadata, { v: 'snap' });
  await assert.rejects(blob.delete(), refusedWith(409, 'SnapshotsPresent'));
  await blob.withSnapshot(first.snapshot!).delete();
  await assert.rejects(blob.withSnapshot(first.snapshot!).getProperties(), (err: RestError) => err.statusCode === 404);
  await blob.delete({ deleteSnapshots: 'only' });
  assert.equal((await blob.downloadToBuffer()).toString(), 'version two');
  await blob.createSnapshot();
  await blob.delete({ deleteSnapshots: 'include' });
  assert.equal(await blob.exists(), false);
});

test('access tiers: Set Blob Tier, tier in properties and listings; archived blobs refuse reads (409 BlobArchived) until rehydrated', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('tiers');
  await container.create();
  const blob = container.getBlockBlobClient('cold.bin');
  await blob.upload('cold bytes', 10, { tier: 'Cool' });
  let properties = await blob.getProperties();
  assert.equal(properties.accessTier, 'Cool');
  assert.equal(properties.accessTierInferred, false);
  await blob.setAccessTier('Archive');
  await assert.rejects(blob.downloadToBuffer(), refusedWith(409, 'BlobArchived'));
  const rehydrate = await blob.setAccessTier('Hot');
  assert.equal(rehydrate._response.status, 202);
  properties = await blob.getProperties();
  assert.equal(properties.accessTier, 'Hot');
  for await (const item of container.listBlobsFlat()) assert.equal(item.properties.accessTier, 'Hot');
  await assert.rejects(blob.setAccessTier('P10'), refusedWith(400, 'InvalidHeaderValue'));
});

test('append blobs: create, Append Block with append-position and max-size conditions, seal', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('appends');
  await container.create();
  const log = container.getAppendBlobClient('log.txt');
  await log.create({ blobHTTPHeaders: { blobContentType: 'text/plain' } });
  const first = await log.appendBlock('line 1\n', 7);
  assert.equal(first.blobAppendOffset, '0');
  const second = await log.appendBlock('line 2\n', 7, { conditions: { appendPosition: 7 } });
  assert.equal(second.blobAppendOffset, '7');
  assert.equal(second.blobCommittedBlockCount, 2);
  await assert.rejects(log.appendBlock('x', 1, { conditions: { appendPosition: 3 } }), refusedWith(412, 'AppendPositionConditionNotMet'));
  await assert.rejects(log.appendBlock('x', 1, { conditions: { maxSize: 14 } }), refusedWith(412, 'MaxBlobSizeConditionNotMet'));
  const snapshot = await log.createSnapshot();
  await log.appendBlock('line 3\n', 7);
  assert.equal((await log.downloadToBuffer()).toString(), 'line 1\nline 2\nline 3\n');
  assert.equal((await log.withSnapshot(snapshot.snapshot!).downloadToBuffer()).toString(), 'line 1\nline 2\n', 'a snapshot keeps its length');
  const properties = await log.getProperties();
  assert.equal(properties.blobType, 'AppendBlob');
  assert.equal(properties.blobCommittedBlockCount, 3);
  await log.seal();
  assert.equal((await log.getProperties()).isSealed, true);
  await assert.rejects(log.appendBlock('x', 1), refusedWith(409, 'BlobIsSealed'));
  await assert.rejects(
    container
      .getBlockBlobClient('log.txt')
      .stageBlock(id('z'), 'z', 1)
      .then(() => container.getBlockBlobClient('log.txt').getBlockList('committed')),
    refusedWith(409, 'InvalidBlobType'),
  );
  await assert.rejects(container.getAppendBlobClient('missing').appendBlock('x', 1), refusedWith(404, 'BlobNotFound'));
});

test('Get Account Information at the service, container and blob level', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const info = await service.getAccountInfo();
  assert.equal(info.skuName, 'Standard_LRS');
  assert.equal(info.accountKind, 'StorageV2');
  const container = service.getContainerClient('info');
  await container.create();
  assert.equal((await container.getAccountInfo()).accountKind, 'StorageV2');
  assert.equal((await container.getBlobClient('any').getAccountInfo()).skuName, 'Standard_LRS');
});

test('the secondary endpoint (<account>-secondary): Get Blob Service Stats there (refused on the primary), reads of the same data, writes refused', async (t) => {
  const { service, storage } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('replicated');
  await container.create();
  await container.getBlockBlobClient('a.txt').upload('alpha', 5);
  const secondaryUrl = `${storage.facts!.storage!.httpBlobEndpoint}-secondary`;
  const secondary = new BlobServiceClient(secondaryUrl, developmentCredential);

  const stats = await secondary.getStatistics();
  assert.equal(stats.geoReplication?.status, 'live');
  assert.ok(stats.geoReplication?.lastSyncOn instanceof Date && !Number.isNaN(stats.geoReplication.lastSyncOn.getTime()));
  await assert.rejects(service.getStatistics(), refusedWith(400, 'InvalidQueryParameterValue'));

  const mirror = secondary.getContainerClient('replicated');
  assert.equal((await mirror.getBlockBlobClient('a.txt').downloadToBuffer()).toString(), 'alpha');
  const names: string[] = [];
  for await (const blob of mirror.listBlobsFlat()) names.push(blob.name);
  assert.deepEqual(names, ['a.txt']);
  await assert.rejects(mirror.getBlockBlobClient('b.txt').upload('beta', 4), refusedWith(403, 'AuthorizationFailure'));
  await assert.rejects(mirror.getBlockBlobClient('a.txt').delete(), refusedWith(403, 'AuthorizationFailure'));
  assert.equal((await container.getBlockBlobClient('a.txt').downloadToBuffer()).toString(), 'alpha');
  assert.equal(await container.getBlockBlobClient('b.txt').exists(), false);
  // Another account's name with the suffix is no account.
  await assert.rejects(
    new BlobServiceClient(`${storage.facts!.storage!.httpBlobEndpoint.replace('devstoreaccount1', 'nosuch')}-secondary`, developmentCredential).getStatistics(),
    (err: RestError) => {
      assert.equal(err.statusCode, 400);
      return true;
    },
  );
});
