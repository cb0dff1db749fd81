/**
 * Append blobs: created by Put Blob with `x-ms-blob-type: AppendBlob`, grown by Append
 * Block (its body, or a range of a source URL: Append Block From URL) and closed by Append
 * Blob Seal. Append Block takes the blob conditions, the lease, and the append conditions
 * `x-ms-blob-condition-maxsize` and `x-ms-blob-condition-appendpos`.
 */
import { errors, StorageError } from '../errors.ts';
import { httpDate } from '../xml.ts';
import type { BlobRecord } from '../persistence/store.ts';
import { body, header, type Operation } from './context.ts';
import { checkWriteConditions, conditionsOf } from './conditions.ts';
import { checkLeaseCondition } from './leases.ts';
import { expectedMd5 } from './blob.ts';
import { openSource, sourceRange } from './copy.ts';

/** The most blocks an append blob takes, as the service allows. */
const MAX_APPEND_BLOCKS = 50_000;

function numberHeader(op: Operation, name: string): number | undefined {
  const raw = header(op, name);
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw)) throw errors.invalidHeader(name, raw);
  return Number(raw);
}

function checkAppendBlob(blob: BlobRecord): void {
  if (blob.blobType !== 'AppendBlob') throw errors.blobTypeMismatch();
  if (blob.sealed) throw new StorageError(409, 'BlobIsSealed', 'The blob is sealed and cannot be modified.');
}

export async function appendBlock(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('append');
  op.store.getContainer(container);
  const conditions = conditionsOf(op);
  const maxSize = numberHeader(op, 'x-ms-blob-condition-maxsize');
  const appendPosition = numberHeader(op, 'x-ms-blob-condition-appendpos');
  const md5 = expectedMd5(op, 'content-md5');
  const fromUrl = header(op, 'x-ms-copy-source') !== undefined;
  const source = fromUrl ? (await openSource(op, sourceRange(op))).read() : body(op);
  const result = await op.store.appendBlock(container, name, source, op.limits.maxBlockBytes, (blob, appending) => {
    checkWriteConditions(conditions, blob);
    checkLeaseCondition(op, blob.lease, op.store.now(), 'blob');
    checkAppendBlob(blob);
    if (md5 && md5 !== appending.md5) throw errors.md5Mismatch();
    if (maxSize !== undefined && blob.size + appending.size > maxSize) {
      throw new StorageError(412, 'MaxBlobSizeConditionNotMet', 'The max blob size condition specified was not met.');
    }
    if (appendPosition !== undefined && blob.size !== appendPosition) {
      throw new StorageError(412, 'AppendPositionConditionNotMet', 'The append position condition specified was not met.');
    }
    if ((blob.appendCount ?? 0) >= MAX_APPEND_BLOCKS) {
      throw new StorageError(409, 'BlockCountExceedsLimit', 'The committed block count cannot exceed the maximum limit of 50,000 blocks.');
    }
  });
  op.reply
    .header('etag', result.blob.etag)
    .header('last-modified', httpDate(result.blob.modified))
    .header('content-md5', result.md5)
    .header('x-ms-blob-append-offset', String(result.offset))
    .header('x-ms-blob-committed-block-count', String(result.blob.appendCount))
    .header('x-ms-request-server-encrypted', 'true');
  await op.reply.code(201).send();
}

/** Append Blob Seal: no more appends (`x-ms-blob-sealed: true` on reads). */
export async function sealAppendBlob(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('write');
  const conditions = conditionsOf(op);
  const appendPosition = numberHeader(op, 'x-ms-blob-condition-appendpos');
  const blob = (await op.store.updateBlob(container, name, (current, now) => {
    checkWriteConditions(conditions, current);
    checkLeaseCondition(op, current.lease, now, 'blob');
    if (current.blobType !== 'AppendBlob') throw errors.blobTypeMismatch();
    if (appendPosition !== undefined && current.size !== appendPosition) {
      throw new StorageError(412, 'AppendPositionConditionNotMet', 'The append position condition specified was not met.');
    }
    return { ...current, sealed: true, etag: op.store.newEtag(), modified: now };
  }))!;
  op.reply.header('etag', blob.etag).header('last-modified', httpDate(blob.modified)).header('x-ms-blob-sealed', 'true');
  await op.reply.code(200).send();
}
