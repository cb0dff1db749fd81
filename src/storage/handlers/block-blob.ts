/** Block blobs built from blocks: Put Block, Put Block List and Get Block List. */
import { errors } from '../errors.ts';
import { blockListXml, httpDate, parseBlockList } from '../xml.ts';
import { body, header, metadataFromHeaders, smallBody, type Operation } from './context.ts';
import { putBlockFromUrl } from './copy.ts';
import { blobProperties, expectedMd5, newBlobExtras, writePrecondition, writeResult } from './blob.ts';
import { checkLeaseCondition } from './leases.ts';

/** Largest block list body we read (50,000 ids of 64 bytes, with tags). */
const MAX_BLOCK_LIST_BYTES = 8 * 1024 * 1024;

function blockId(op: Operation): string {
  const id = op.query.get('blockid') ?? '';
  // Block ids are base64 of at most 64 bytes.
  if (!id || !/^[A-Za-z0-9+/]+={0,2}$/.test(id) || Buffer.from(id, 'base64').length > 64) throw errors.invalidBlockId();
  return id;
}

/** Put Block: stages a block (Content-MD5 checked when sent); a leased blob needs its lease id. */
export async function putBlock(op: Operation, container: string, name: string): Promise<void> {
  const id = blockId(op);
  if (header(op, 'x-ms-copy-source') !== undefined) return putBlockFromUrl(op, container, name, id);
  await op.authorize('write');
  op.store.getContainer(container);
  const existing = op.store.findBlob(container, name);
  if (existing) checkLeaseCondition(op, existing.lease, op.store.now(), 'blob');
  const md5 = expectedMd5(op, 'content-md5');
  const staged = await op.store.putBlock(container, name, id, body(op), op.limits.maxBlockBytes, md5);
  op.reply.header('x-ms-request-server-encrypted', 'true').header('content-md5', staged.md5);
  await op.reply.code(201).send();
}

/** Put Block List: commits staged and committed blocks; `x-ms-blob-content-md5` is stored as given. */
export async function putBlockList(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('write');
  op.store.getContainer(container);
  const precondition = writePrecondition(op);
  precondition(op.store.findBlob(container, name));
  const list = parseBlockList(await smallBody(op, MAX_BLOCK_LIST_BYTES));
  if (!list) throw errors.invalidXml();
  if (list.some((entry) => !entry.id)) throw errors.invalidBlockList();
  const givenMd5 = expectedMd5(op, 'x-ms-blob-content-md5');
  const blob = await op.store.commitBlockList(container, name, list, {
    properties: blobProperties(op, false),
    metadata: metadataFromHeaders(op),
    limit: op.limits.maxBlobBytes,
    precondition,
    extra: { ...newBlobExtras(op), ...(givenMd5 ? { md5: givenMd5 } : {}) },
  });
  op.blobWritten();
  writeResult(op, blob);
  await op.reply.code(201).send();
}

/** Get Block List: `blocklisttype` committed (default), uncommitted or all. */
export async function getBlockList(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('read');
  const type = (op.query.get('blocklisttype') ?? 'committed').toLowerCase();
  if (type !== 'committed' && type !== 'uncommitted' && type !== 'all') throw errors.invalidQuery('blocklisttype');
  op.store.getContainer(container);
  const blob = op.store.findBlob(container, name);
  const snapshot = op.query.get('snapshot');
  const version = snapshot === null ? blob : blob?.snapshots?.find((s) => s.snapshot === snapshot);
  const uncommitted = type === 'committed' || snapshot !== null ? [] : await op.store.uncommittedBlocks(container, name);
  if (!version && uncommitted.length === 0) throw errors.blobNotFound();
  if (version && (version.blobType ?? 'BlockBlob') !== 'BlockBlob') throw errors.blobTypeMismatch();
  if (version) {
    op.reply.header('etag', version.etag).header('last-modified', httpDate(version.modified)).header('x-ms-blob-content-length', String(version.size));
  }
  const committed = type === 'uncommitted' ? undefined : (version?.blocks ?? []);
  await op.reply
    .code(200)
    .type('application/xml')
    .send(blockListXml(committed, type === 'committed' ? undefined : uncommitted));
}
