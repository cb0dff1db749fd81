/**
 * Copies: Copy Blob (`x-ms-copy-source`, answered 202; with `x-ms-requires-sync: true`
 * it is Copy Blob From URL), Put Blob From URL (the same with `x-ms-blob-type`, 201), Put
 * Block From URL (`comp=block` with a source and `x-ms-source-range`), Incremental Copy
 * Blob (`comp=incrementalcopy`) and Abort Copy Blob.
 * A source in this account that the caller may read itself (Shared Key, a data role) is
 * read from disk; any other source (another server, or a URL carrying its own SAS) is
 * fetched over HTTP with its own credentials (`x-ms-copy-source-authorization`), so the
 * source decides who may read it. Every copy completes before the answer, so its status is
 * `success` at once and there is never a pending copy to abort. Copy Blob keeps the
 * source's blob type, as the service does: a page blob is copied page by page (only its
 * written pages take space), an append blob keeps its committed block count.
 */
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { errors, StorageError } from '../errors.ts';
import type { BlobProperties, BlobRecord, BlobType, PageSource, WriteOptions } from '../persistence/store.ts';
import type { PageRange } from '../persistence/page-ranges.ts';
import { header, metadataFromHeaders, type Operation } from './context.ts';
import { blobProperties, expectedMd5, newBlobExtras, snapshotTime, writePrecondition, writeResult } from './blob.ts';
import { checkLeaseCondition } from './leases.ts';
import { httpDate } from '../xml.ts';

interface CopySource {
  /** The source's bytes (of the range asked for), opened when called. */
  read(): Readable;
  size: number;
  properties: BlobProperties;
  metadata: Record<string, string>;
  blobType: BlobType;
  /** A page blob's sequence number, an append blob's committed block count. */
  sequenceNumber?: number;
  appendCount?: number;
  /** A local page blob: its data file and written pages, copied as they are. */
  pageFile?: { path: string; pages: PageRange[] };
}

const operationNotAllowedOnIncrementalCopyBlob = () =>
  new StorageError(409, 'OperationNotAllowedOnIncrementalCopyBlob', 'The specified operation is not allowed on an incremental copy blob.');

/**
 * An incremental copy blob takes only Get Blob Properties, Incremental Copy Blob and Delete
 * Blob (its snapshots are read as usual): anything else that names it is refused, to a
 * caller who may read it (others learn nothing of it).
 */
export async function checkIncrementalCopyBlobOperation(op: Operation, container: string, name: string, allowed: boolean): Promise<void> {
  if (allowed || op.query.get('snapshot') !== null) return;
  if (!op.store.findContainer(container) || !op.store.findBlob(container, name)?.incrementalCopy) return;
  await op.authorize('read');
  throw operationNotAllowedOnIncrementalCopyBlob();
}

/** `bytes=start-end` of x-ms-source-range; null when absent. */
export function sourceRange(op: Operation): { start: number; end: number } | null {
  const raw = header(op, 'x-ms-source-range');
  if (raw === undefined) return null;
  const match = /^bytes=(\d+)-(\d+)$/.exec(raw.trim());
  if (!match || Number(match[2]) < Number(match[1])) throw errors.invalidHeader('x-ms-source-range', raw);
  return { start: Number(match[1]), end: Number(match[2]) };
}

/** The container and blob a URL names in this account, or null when it names another place. */
function localSource(op: Operation, url: URL): { container: string; blob: string; snapshot: string | null } | null {
  if (url.host !== op.request.headers.host) return null;
  const base = new URL(op.endpoint.endsWith('/') ? op.endpoint : `${op.endpoint}/`);
  if (!url.pathname.startsWith(base.pathname)) return null;
  const [container, ...rest] = url.pathname.slice(base.pathname.length).split('/');
  if (!container || rest.length === 0) return null;
  try {
    return { container: decodeURIComponent(container), blob: decodeURIComponent(rest.join('/')), snapshot: url.searchParams.get('snapshot') };
  } catch {
    return null;
  }
}

async function readLocal(
  op: Operation,
  source: { container: string; blob: string; snapshot: string | null },
  range: { start: number; end: number } | null,
): Promise<CopySource> {
  const base = op.store.findBlob(source.container, source.blob);
  const version = source.snapshot === null ? base : base?.snapshots?.find((s) => s.snapshot === source.snapshot);
  if (!version) throw errors.cannotVerifyCopySource(404, 'The specified blob does not exist.');
  if (version === base && base.incrementalCopy) throw operationNotAllowedOnIncrementalCopyBlob();
  if (version.tier === 'Archive') throw errors.blobArchived();
  const start = range?.start ?? 0;
  const end = Math.min(range?.end ?? version.size - 1, version.size - 1);
  if (range && start >= version.size) throw errors.invalidRange();
  const { contentType, contentEncoding, contentLanguage, contentDisposition, cacheControl } = version;
  const path = op.store.dataPath(source.container, version);
  const blobType = version.blobType ?? 'BlockBlob';
  return {
    read: () => (end < start ? Readable.from([]) : createReadStream(path, { start, end })),
    size: Math.max(0, end - start + 1),
    properties: { contentType, ...{ contentEncoding, contentLanguage, contentDisposition, cacheControl } },
    metadata: version.metadata,
    blobType,
    ...(blobType === 'PageBlob' ? { sequenceNumber: version.sequenceNumber ?? 0, pageFile: { path, pages: version.pages ?? [] } } : {}),
    ...(blobType === 'AppendBlob' ? { appendCount: version.appendCount ?? 0 } : {}),
  };
}

/** Fetches a source over HTTP with its own credentials; the source's refusal is CannotVerifyCopySource. */
async function readRemote(op: Operation, url: URL, range: { start: number; end: number } | null): Promise<CopySource> {
  const headers: Record<string, string> = { 'x-ms-version': '2021-08-06' };
  const authorization = header(op, 'x-ms-copy-source-authorization');
  if (authorization) headers.authorization = authorization;
  if (range) headers['x-ms-range'] = `bytes=${range.start}-${range.end}`;
  let answer;
  try {
    answer = await request(url, { headers, dispatcher: op.sourceDispatcher, headersTimeout: 30_000, bodyTimeout: 60_000 });
  } catch (err) {
    throw errors.cannotVerifyCopySource(400, (err as Error).message);
  }
  if (answer.statusCode !== 200 && answer.statusCode !== 206) {
    await answer.body.dump();
    throw errors.cannotVerifyCopySource(answer.statusCode, `The source answered ${answer.statusCode}.`);
  }
  const h = (name: string) => {
    const value = answer.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const metadata: Record<string, string> = {};
  for (const [name, value] of Object.entries(answer.headers)) if (name.startsWith('x-ms-meta-') && typeof value === 'string') metadata[name.slice(10)] = value;
  const properties: BlobProperties = { contentType: h('content-type') ?? 'application/octet-stream' };
  for (const [key, name] of [
    ['contentEncoding', 'content-encoding'],
    ['contentLanguage', 'content-language'],
    ['contentDisposition', 'content-disposition'],
    ['cacheControl', 'cache-control'],
  ] as const) {
    const value = h(name);
    if (value !== undefined) properties[key] = value;
  }
  const blobType = (['BlockBlob', 'AppendBlob', 'PageBlob'] as const).find((type) => type === h('x-ms-blob-type')) ?? 'BlockBlob';
  const whole = (name: string) => (/^\d+$/.test(h(name) ?? '') ? Number(h(name)) : 0);
  return {
    read: () => answer.body,
    size: Number(h('content-length') ?? 0),
    properties,
    metadata,
    blobType,
    ...(blobType === 'PageBlob' ? { sequenceNumber: whole('x-ms-blob-sequence-number') } : {}),
    ...(blobType === 'AppendBlob' ? { appendCount: whole('x-ms-blob-committed-block-count') } : {}),
  };
}

/** `x-ms-copy-source`: an http(s) URL. */
function sourceUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw errors.invalidHeader('x-ms-copy-source', raw);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw errors.invalidHeader('x-ms-copy-source', raw);
  return url;
}

export async function openSource(op: Operation, range: { start: number; end: number } | null): Promise<CopySource> {
  const url = sourceUrl(header(op, 'x-ms-copy-source')!);
  const local = localSource(op, url);
  if (local && !url.searchParams.has('sig') && (await op.mayReadLocally(local.container))) return readLocal(op, local, range);
  return readRemote(op, url, range);
}

/** Copy Blob / Copy Blob From URL / Put Blob From URL, by their headers. */
export async function copyBlob(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('create');
  op.store.getContainer(container);
  const putFromUrl = header(op, 'x-ms-blob-type') !== undefined;
  if (putFromUrl && header(op, 'x-ms-blob-type') !== 'BlockBlob') throw errors.invalidBlobType();
  const precondition = writePrecondition(op);
  precondition(op.store.findBlob(container, name));
  const source = await openSource(op, null);
  // Copy Blob keeps the source's type; Copy Blob From URL and Put Blob From URL make block blobs.
  const keepsType = !putFromUrl && header(op, 'x-ms-requires-sync') !== 'true' && source.blobType !== 'BlockBlob';
  if (source.size > op.limits.maxBlobBytes && !(keepsType && source.blobType === 'PageBlob')) {
    source.read().destroy();
    throw errors.requestBodyTooLarge();
  }
  const copyId = randomUUID();
  const given = metadataFromHeaders(op);
  // Put Blob From URL takes the content headers it names, else (by default) the source's.
  const ownProperties = putFromUrl && (header(op, 'x-ms-blob-content-type') !== undefined || header(op, 'x-ms-copy-source-blob-properties') === 'false');
  const options: WriteOptions & { expectedMd5?: string } = {
    properties: ownProperties ? blobProperties(op, false) : source.properties,
    metadata: Object.keys(given).length || putFromUrl ? given : source.metadata,
    limit: op.limits.maxBlobBytes,
    precondition,
    extra: {
      ...newBlobExtras(op),
      ...(putFromUrl ? {} : { copy: copyRecord(op, copyId, header(op, 'x-ms-copy-source')!, source.size) }),
    },
  };
  const md5 = expectedMd5(op, 'x-ms-source-content-md5');
  if (md5) options.expectedMd5 = md5;
  const blob = keepsType ? await writeTyped(op, container, name, source, options) : await op.store.putBlob(container, name, source.read(), options);
  op.blobWritten();
  if (putFromUrl) {
    writeResult(op, blob);
    await op.reply.code(201).send();
    return;
  }
  copyResult(op, blob, copyId);
  await op.reply.code(202).send();
}

function copyRecord(op: Operation, id: string, source: string, size: number) {
  return { id, source, status: 'success' as const, progress: `${size}/${size}`, completed: op.store.now() };
}

function copyResult(op: Operation, blob: BlobRecord, copyId: string): void {
  op.reply.header('etag', blob.etag).header('last-modified', httpDate(blob.modified)).header('x-ms-copy-id', copyId).header('x-ms-copy-status', 'success');
}

/** Where a page blob's copy takes its pages from: the source's data file, or its bytes as they come. */
function pagesOf(source: CopySource): PageSource {
  return source.pageFile ?? source.read();
}

/** Copy Blob of a page or append blob: the destination is of the same type. */
async function writeTyped(op: Operation, container: string, name: string, source: CopySource, options: WriteOptions): Promise<BlobRecord> {
  const typed: WriteOptions = { ...options, extra: { ...options.extra, blobType: source.blobType, tier: undefined, md5: '' } };
  if (source.blobType === 'AppendBlob') {
    return op.store.putBlob(container, name, source.read(), { ...typed, extra: { ...typed.extra, appendCount: source.appendCount ?? 0 } });
  }
  return op.store.createPageBlob(
    container,
    name,
    source.size,
    { ...typed, extra: { ...typed.extra, sequenceNumber: source.sequenceNumber ?? 0 } },
    pagesOf(source),
  );
}

/**
 * Incremental Copy Blob: copies a snapshot of a page blob (`x-ms-copy-source` with
 * `?snapshot=`) to a page blob that does not exist yet or was made by an earlier incremental
 * copy of the same blob from an earlier snapshot, and takes a snapshot of the result
 * (`x-ms-copy-destination-snapshot`). The result equals the source snapshot whether it was
 * reached by differences or whole, so the whole written pages are copied.
 */
export async function incrementalCopyBlob(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('create');
  op.store.getContainer(container);
  const raw = header(op, 'x-ms-copy-source');
  if (raw === undefined) throw errors.missingHeader('x-ms-copy-source');
  const url = sourceUrl(raw);
  const sourceSnapshot = url.searchParams.get('snapshot');
  if (!sourceSnapshot) {
    throw new StorageError(409, 'IncrementalCopySourceMustBeSnapshot', 'The source for incremental copy request must be a snapshot.');
  }
  const sourceBlob = `${url.origin}${url.pathname}`;
  const precondition = writePrecondition(op);
  const destination = (existing: BlobRecord | undefined) => {
    precondition(existing);
    if (!existing) return;
    if (existing.incrementalCopy?.sourceBlob !== sourceBlob) {
      throw new StorageError(
        409,
        'IncrementalCopyBlobMismatch',
        'The specified source blob is different than the copy source of the existing incremental copy blob.',
      );
    }
    if (sourceSnapshot < existing.incrementalCopy.sourceSnapshot) {
      throw new StorageError(
        409,
        'IncrementalCopyOfEarlierSnapshotNotAllowed',
        'The specified snapshot is earlier than the last snapshot copied into the incremental copy blob.',
      );
    }
  };
  destination(op.store.findBlob(container, name));
  const source = await openSource(op, null);
  if (source.blobType !== 'PageBlob') {
    source.read().destroy();
    throw new StorageError(409, 'InvalidSourceBlobType', 'The copy source blob type is invalid for this operation.');
  }
  const copyId = randomUUID();
  const blob = await op.store.createPageBlob(
    container,
    name,
    source.size,
    {
      properties: source.properties,
      metadata: source.metadata,
      limit: 0,
      precondition: destination,
      extra: { blobType: 'PageBlob', md5: '', sequenceNumber: source.sequenceNumber ?? 0, copy: copyRecord(op, copyId, raw, source.size) },
      finish: (record, now) => {
        const { name: _n, lease: _l, snapshots = [], ...version } = record;
        const stamp = snapshotTime(now, snapshots);
        return {
          ...record,
          incrementalCopy: { sourceBlob, sourceSnapshot, destinationSnapshot: stamp },
          snapshots: [...snapshots, { ...version, snapshot: stamp }],
        };
      },
    },
    pagesOf(source),
  );
  op.blobWritten();
  copyResult(op, blob, copyId);
  await op.reply.code(202).send();
}

/** Put Block From URL: stages a block from a range of a source blob. */
export async function putBlockFromUrl(op: Operation, container: string, name: string, blockId: string): Promise<void> {
  await op.authorize('write');
  op.store.getContainer(container);
  const existing = op.store.findBlob(container, name);
  if (existing) checkLeaseCondition(op, existing.lease, op.store.now(), 'blob');
  const source = await openSource(op, sourceRange(op));
  const staged = await op.store.putBlock(container, name, blockId, source.read(), op.limits.maxBlockBytes, expectedMd5(op, 'x-ms-source-content-md5'));
  op.reply.header('x-ms-request-server-encrypted', 'true').header('content-md5', staged.md5);
  await op.reply.code(201).send();
}

/** Abort Copy Blob: copies here finish before they are answered, so none is ever pending. */
export async function abortCopyBlob(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('write');
  if (header(op, 'x-ms-copy-action') !== 'abort') throw errors.invalidHeader('x-ms-copy-action', header(op, 'x-ms-copy-action'));
  const copyId = op.query.get('copyid');
  if (!copyId) throw errors.invalidQuery('copyid');
  const blob = op.store.getBlob(container, name);
  if (header(op, 'x-ms-lease-id')) checkLeaseCondition(op, blob.lease, op.store.now(), 'blob');
  if (blob.copy?.id !== copyId)
    throw new StorageError(409, 'CopyIdMismatch', 'The specified copy ID did not match the copy ID for the pending copy operation.');
  throw new StorageError(409, 'NoPendingCopyOperation', 'There is currently no pending copy operation.');
}
