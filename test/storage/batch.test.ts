/**
 * Blob Batch through the SDK's BlobBatchClient: deletes and tier changes at the service and
 * container level, each sub-request authenticated and answered on its own; bad batches are
 * refused whole.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sharedKeyFetch, startSharedKeyStorage } from './helpers.ts';

test('Blob Batch: Delete Blob and Set Blob Tier in one request; each sub-request answers for itself', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('batched');
  await container.create();
  for (const name of ['a', 'b', 'c', 'd']) await container.getBlockBlobClient(name).upload(name, 1);
  const batch = service.getBlobBatchClient();

  const tiers = await batch.setBlobsAccessTier([container.getBlobClient('a'), container.getBlobClient('b')], 'Cool');
  assert.equal(tiers.subResponsesSucceededCount, 2);
  assert.equal((await container.getBlobClient('b').getProperties()).accessTier, 'Cool');

  const deleted = await batch.deleteBlobs([container.getBlobClient('a'), container.getBlobClient('missing'), container.getBlobClient('c')]);
  assert.equal(deleted.subResponsesSucceededCount, 2);
  assert.equal(deleted.subResponsesFailedCount, 1);
  assert.deepEqual(
    deleted.subResponses.map((r) => [r.status, r.errorCode ?? '']),
    [
      [202, ''],
      [404, 'BlobNotFound'],
      [202, ''],
    ],
  );
  const left: string[] = [];
  for await (const blob of container.listBlobsFlat()) left.push(blob.name);
  assert.deepEqual(left, ['b', 'd']);

  // At the container level too; a leased blob refuses its own delete, not the others'.
  await container.getBlobClient('d').getBlobLeaseClient('33333333-3333-4333-8333-333333333333').acquireLease(-1);
  const inContainer = await container.getBlobBatchClient().deleteBlobs([container.getBlobClient('b'), container.getBlobClient('d')]);
  assert.deepEqual(
    inContainer.subResponses.map((r) => [r.status, r.errorCode ?? '']),
    [
      [202, ''],
      [412, 'LeaseIdMissing'],
    ],
  );
});

test('Blob Batch refuses other operations, mixed kinds and broken bodies whole, and a sub-request without credentials is refused alone', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('raw-batch');
  await container.create();
  await container.getBlockBlobClient('x').upload('x', 1);
  const send = (body: string) =>
    sharedKeyFetch(`${service.url}/?comp=batch`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'multipart/mixed; boundary=batch_1', 'x-ms-version': '2021-08-06' },
    });
  const part = (line: string, headers = '') =>
    `--batch_1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\nContent-ID: 0\r\n\r\n${line} HTTP/1.1\r\n${headers}\r\n`;
  for (const body of [
    `${part('GET /devstoreaccount1/raw-batch/x')}--batch_1--\r\n`,
    `${part('DELETE /devstoreaccount1/raw-batch/x')}${part('PUT /devstoreaccount1/raw-batch/x?comp=tier', 'x-ms-access-tier: Cool\r\n')}--batch_1--\r\n`,
    `${part('DELETE /devstoreaccount1/raw-batch/x')}`,
    'not a batch',
  ]) {
    const answer = await send(body);
    assert.equal(answer.status, 400, body);
    assert.ok(answer.headers.get('x-ms-error-code'));
  }
  const unsigned = await send(`${part('DELETE /devstoreaccount1/raw-batch/x', 'x-ms-version: 2021-08-06\r\n')}--batch_1--\r\n`);
  assert.equal(unsigned.status, 202);
  const text = await unsigned.text();
  assert.match(text, /HTTP\/1\.1 401 /);
  assert.match(text, /Content-ID: 0/);
  assert.equal(await container.getBlobClient('x').exists(), true, 'an unsigned sub-request deletes nothing');
});
