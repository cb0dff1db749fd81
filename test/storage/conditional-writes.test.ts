/** Conditional writes (If-None-Match, If-Match) through the official storage SDK, answered as the service answers them. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RestError } from '@azure/storage-blob';
import { startSharedKeyStorage } from './helpers.ts';

const refusedWith = (statusCode: number, code: string) => (err: RestError) => {
  assert.equal(err.statusCode, statusCode);
  assert.equal(err.code, code);
  assert.equal((err.details as { errorCode?: string } | undefined)?.errorCode, code, 'x-ms-error-code names the same code');
  return true;
};

test('If-None-Match: * on an existing blob → 409 BlobAlreadyExists (Put Blob and Put Block List); a matching ETag → 412; the blob stays as it was', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('conditions');
  await container.create();
  const blob = container.getBlockBlobClient('first.txt');
  const created = await blob.upload('first', 5, { conditions: { ifNoneMatch: '*' } });

  await assert.rejects(blob.upload('second', 6, { conditions: { ifNoneMatch: '*' } }), refusedWith(409, 'BlobAlreadyExists'));
  const blockId = Buffer.from('block-1').toString('base64');
  await blob.stageBlock(blockId, 'third', 5);
  await assert.rejects(blob.commitBlockList([blockId], { conditions: { ifNoneMatch: '*' } }), refusedWith(409, 'BlobAlreadyExists'));
  await assert.rejects(blob.upload('fourth', 6, { conditions: { ifNoneMatch: created.etag! } }), refusedWith(412, 'ConditionNotMet'));
  await assert.rejects(blob.upload('fifth', 5, { conditions: { ifMatch: '"0x1"' } }), refusedWith(412, 'ConditionNotMet'));
  assert.equal((await blob.downloadToBuffer()).toString(), 'first');
  assert.equal((await blob.getProperties()).etag, created.etag);

  // The conditions that hold let the write through.
  await blob.upload('sixth', 5, { conditions: { ifMatch: created.etag! } });
  await blob.commitBlockList([blockId], { conditions: { ifNoneMatch: '"0x1"' } });
  assert.equal((await blob.downloadToBuffer()).toString(), 'third');
});

test('If-None-Match: * is decided when the write commits: of eight uploads racing to create one blob, exactly one succeeds', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('race');
  await container.create();
  const blob = container.getBlockBlobClient('claimed.txt');
  const outcomes = await Promise.allSettled(
    Array.from({ length: 8 }, (_, writer) => blob.upload(`writer ${writer}`, `writer ${writer}`.length, { conditions: { ifNoneMatch: '*' } })),
  );
  const winners = outcomes.flatMap((o, writer) => (o.status === 'fulfilled' ? [writer] : []));
  assert.equal(winners.length, 1, `one upload created the blob: ${winners.join(', ')}`);
  for (const outcome of outcomes) if (outcome.status === 'rejected') refusedWith(409, 'BlobAlreadyExists')(outcome.reason as RestError);
  assert.equal((await blob.downloadToBuffer()).toString(), `writer ${winners[0]}`);
  const files: string[] = [];
  for await (const item of container.listBlobsFlat()) files.push(item.name);
  assert.deepEqual(files, ['claimed.txt']);
});
