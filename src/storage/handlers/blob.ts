import { createReadStream } from 'node:fs';
import { errors } from '../errors.ts';
import { httpDate, parseBlockList } from '../xml.ts';
import type { BlobProperties, BlobRecord } from '../persistence/store.ts';
import { body, header, metadataFromHeaders, smallBody, type Operation } from './context.ts';
import { CONTAINER_NAME } from './container.ts';

/** Longest blob name the service allows, in characters. */
export const MAX_BLOB_NAME = 1024;
/** Largest block list body we read (50,000 ids of 64 bytes, with tags). */
const MAX_BLOCK_LIST_BYTES = 8 * 1024 * 1024;

function blobProperties(op: Operation, fromContentHeaders: boolean): BlobProperties {
  const pick = (blobHeader: string, plain: string) => header(op, blobHeader) ?? (fromContentHeaders ? header(op, plain) : undefined);
  const properties: BlobProperties = { contentType: pick('x-ms-blob-content-type', 'content-type') ?? 'application/octet-stream' };
  const optional: [keyof BlobProperties, string, string][] = [
    ['contentEncoding', 'x-ms-blob-content-encoding', 'content-encoding'],
    ['contentLanguage', 'x-ms-blob-content-language', 'content-language'],
    ['contentDisposition', 'x-ms-blob-content-disposition', 'content-disposition'],
    ['cacheControl', 'x-ms-blob-cache-control', 'cache-control'],
  ];
  for (const [key, blobHeader, plain] of optional) {
    const value = pick(blobHeader, plain);
    if (value !== undefined) properties[key] = value;
  }
  return properties;
}

function blobHeaders(op: Operation, blob: BlobRecord): void {
  op.reply
    .header('etag', blob.etag)
    .header('last-modified', httpDate(blob.modified))
    .header('x-ms-creation-time', httpDate(blob.created))
    .header('x-ms-blob-type', 'BlockBlob')
    .header('x-ms-lease-state', 'available')
    .header('x-ms-lease-status', 'unlocked')
    .header('x-ms-server-encrypted', 'true')
    .header('x-ms-access-tier', 'Hot')
    .header('x-ms-access-tier-inferred', 'true')
    .header('accept-ranges', 'bytes')
    .header('content-type', blob.contentType);
  if (blob.contentEncoding) op.reply.header('content-encoding', blob.contentEncoding);
  if (blob.contentLanguage) op.reply.header('content-language', blob.contentLanguage);
  if (blob.contentDisposition) op.reply.header('content-disposition', blob.contentDisposition);
  if (blob.cacheControl) op.reply.header('cache-control', blob.cacheControl);
  for (const [key, value] of Object.entries(blob.metadata)) op.reply.header(`x-ms-meta-${key}`, value);
  for (const [name, value] of Object.entries(op.responseHeaderOverrides)) op.reply.header(name, value);
}

function writeResult(op: Operation, blob: BlobRecord): void {
  op.reply
    .header('etag', blob.etag)
    .header('last-modified', httpDate(blob.modified))
    .header('content-md5', blob.md5)
    .header('x-ms-request-server-encrypted', 'true');
}

/** Whether an If-Match / If-None-Match value names the blob's ETag (`*` names any blob). */
function namesEtag(value: string, blob: BlobRecord): boolean {
  return (
    value === '*' ||
    value
      .split(',')
      .map((v) => v.trim())
      .includes(blob.etag)
  );
}

/** If-Match / If-None-Match of a read against the blob's ETag. */
function readConditions(op: Operation, blob: BlobRecord): 'ok' | 'not-modified' {
  const ifMatch = header(op, 'if-match');
  if (ifMatch && !namesEtag(ifMatch, blob)) throw errors.conditionNotMet();
  const ifNoneMatch = header(op, 'if-none-match');
  return ifNoneMatch && namesEtag(ifNoneMatch, blob) ? 'not-modified' : 'ok';
}

/**
 * If-Match / If-None-Match of a write, checked against the blob it would replace; the
 * store checks it again as the write commits, so of racing conditional writes only
 * those whose condition still holds land. `If-None-Match: *` on an existing blob is a
 * 409 BlobAlreadyExists, as the service answers.
 */
function writeConditions(op: Operation): (existing: BlobRecord | undefined) => void {
  const ifMatch = header(op, 'if-match');
  const ifNoneMatch = header(op, 'if-none-match');
  return (existing) => {
    if (!existing) return;
    if (ifMatch && !namesEtag(ifMatch, existing)) throw errors.conditionNotMet();
    if (ifNoneMatch === '*') throw errors.blobAlreadyExists();
    if (ifNoneMatch && namesEtag(ifNoneMatch, existing)) throw errors.conditionNotMet();
  };
}

/** `x-ms-range` (preferred) or `Range`: `bytes=start-[end]`; null when absent. */
function requestedRange(op: Operation, size: number): { start: number; end: number } | null {
  const raw = header(op, 'x-ms-range') ?? header(op, 'range');
  if (!raw) return null;
  const match = /^bytes=(\d+)-(\d*)$/.exec(raw.trim());
  if (!match) throw errors.invalidHeader('x-ms-range');
  const start = Number(match[1]);
  const end = match[2] ? Math.min(Number(match[2]), size - 1) : size - 1;
  if (start >= size || end < start) throw errors.invalidRange();
  return { start, end };
}

export async function putBlob(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('create');
  const type = header(op, 'x-ms-blob-type');
  if (!type) throw errors.missingHeader('x-ms-blob-type');
  if (type !== 'BlockBlob') throw errors.invalidBlobType();
  const expectedLength = Number(header(op, 'content-length') ?? NaN);
  if (expectedLength > op.limits.maxBlobBytes) throw errors.requestBodyTooLarge();
  const precondition = writeConditions(op);
  precondition(op.store.findBlob(container, name));
  const blob = await op.store.putBlob(container, name, body(op), {
    properties: blobProperties(op, true),
    metadata: metadataFromHeaders(op),
    limit: op.limits.maxBlobBytes,
    expectedMd5: header(op, 'content-md5'),
    precondition,
  });
  op.blobWritten();
  writeResult(op, blob);
  await op.reply.code(201).send();
}

function blockId(op: Operation): string {
  const id = op.query.get('blockid') ?? '';
  // Block ids are base64 of at most 64 bytes.
  if (!id || !/^[A-Za-z0-9+/]+={0,2}$/.test(id) || Buffer.from(id, 'base64').length > 64) throw errors.invalidBlockId();
  return id;
}

export async function putBlock(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('write');
  const id = blockId(op);
  op.store.getContainer(container);
  await op.store.putBlock(container, name, id, body(op), op.limits.maxBlockBytes);
  op.reply.header('x-ms-request-server-encrypted', 'true');
  await op.reply.code(201).send();
}

export async function putBlockList(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('write');
  op.store.getContainer(container);
  const precondition = writeConditions(op);
  precondition(op.store.findBlob(container, name));
  const list = parseBlockList(await smallBody(op, MAX_BLOCK_LIST_BYTES));
  if (!list) throw errors.invalidXml();
  if (list.some((entry) => !entry.id)) throw errors.invalidBlockList();
  const blob = await op.store.commitBlockList(container, name, list, {
    properties: blobProperties(op, false),
    metadata: metadataFromHeaders(op),
    limit: op.limits.maxBlobBytes,
    precondition,
  });
  op.blobWritten();
  writeResult(op, blob);
  await op.reply.code(201).send();
}

/** Get Blob (GET, with ranges → 206) and Get Blob Properties (HEAD). */
export async function readBlob(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('read');
  const blob = op.store.getBlob(container, name);
  blobHeaders(op, blob);
  if (readConditions(op, blob) === 'not-modified') {
    await op.reply.code(304).send();
    return;
  }
  const range = requestedRange(op, blob.size);
  if (op.request.method === 'HEAD') {
    op.reply.header('content-md5', blob.md5).header('content-length', String(blob.size));
    await op.reply.code(200).send();
    return;
  }
  const path = op.store.dataPath(container, blob);
  if (!range) {
    op.reply.header('content-md5', blob.md5).header('content-length', String(blob.size));
    await op.reply.code(200).send(blob.size === 0 ? '' : createReadStream(path));
    return;
  }
  op.reply.header('content-range', `bytes ${range.start}-${range.end}/${blob.size}`).header('content-length', String(range.end - range.start + 1));
  if (range.start === 0 && range.end === blob.size - 1) op.reply.header('x-ms-blob-content-md5', blob.md5);
  await op.reply.code(206).send(createReadStream(path, { start: range.start, end: range.end }));
}

export async function deleteBlob(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('delete');
  await op.store.deleteBlob(container, name);
  await op.reply.code(202).send();
}

export async function blobOperation(op: Operation, container: string, name: string): Promise<void> {
  if (!CONTAINER_NAME.test(container)) throw errors.invalidResourceName();
  if (name.length > MAX_BLOB_NAME || name.includes('\0') || name.endsWith('/')) throw errors.invalidResourceName();
  const comp = op.query.get('comp');
  const method = op.request.method;
  if (method === 'PUT' && comp === null) return putBlob(op, container, name);
  if (method === 'PUT' && comp === 'block') return putBlock(op, container, name);
  if (method === 'PUT' && comp === 'blocklist') return putBlockList(op, container, name);
  if ((method === 'GET' || method === 'HEAD') && comp === null) return readBlob(op, container, name);
  if (method === 'DELETE' && comp === null) return deleteBlob(op, container, name);
  if (comp !== null) throw errors.invalidQuery('comp');
  throw errors.unsupportedOperation();
}
