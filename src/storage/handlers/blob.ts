/**
 * Blob operations: Put Blob, Get Blob / Get Blob Properties (of a blob or a snapshot),
 * Delete Blob, Set/Get Blob Metadata, Set Blob Properties, Snapshot Blob, Set Blob Tier
 * and Lease Blob, and the dispatch of every blob-level request (block lists, append
 * blobs, tags and copies have their own modules).
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { errors } from '../errors.ts';
import { httpDate } from '../xml.ts';
import type { AccessTier, BlobProperties, BlobRecord, BlobVersion, LeaseRecord, SnapshotRecord, WriteOptions } from '../persistence/store.ts';
import { body, header, metadataFromHeaders, type Operation } from './context.ts';
import { CONTAINER_NAME } from './container.ts';
import { checkReadConditions, checkWriteConditions, conditionsOf } from './conditions.ts';
import { checkLeaseCondition, checkReadLease, leaseHeaders, leaseRequest, type LeaseRequest } from './leases.ts';
import { getBlockList, putBlock, putBlockList } from './block-blob.ts';
import { appendBlock, sealAppendBlob } from './append-blob.ts';
import { getBlobTags, setBlobTags, tagsFromHeader } from './tags.ts';
import { abortCopyBlob, checkIncrementalCopyBlobOperation, copyBlob, incrementalCopyBlob } from './copy.ts';
import { STRUCTURED_BODY, wrapping } from './checksums.ts';
import { Crc64 } from '../crc64.ts';
import { Readable } from 'node:stream';
import { getPageRanges, pageBlobCreation, pageBlobPropertyChange, putPage } from './page-blob.ts';
import { getAccountInformation } from './service.ts';

/** Longest blob name the service allows, in characters, and most `/`-separated segments. */
const MAX_BLOB_NAME = 1024;
const MAX_BLOB_NAME_SEGMENTS = 254;
/** Control characters (C0, DEL, C1), which the service refuses in names. */
// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * A blob name the service takes: 1-1024 characters, at most 254 segments, no control
 * characters, not ending in `/`, and no `.` or `..` segment (between `/` or `\`). Dot
 * segments in the URL are resolved before the name is read (server.ts); one that
 * survives came through an encoded separator (`..%2F..%2Fx`, `..%5Cx`): no URL client
 * can name such a blob again, so it is refused rather than stored.
 * Blob names never reach the filesystem either way (data files are named by random ids).
 */
export function checkBlobName(name: string): void {
  if (
    name.length > MAX_BLOB_NAME ||
    name.endsWith('/') ||
    CONTROL_CHARACTER.test(name) ||
    name.split('/').length > MAX_BLOB_NAME_SEGMENTS ||
    name.split(/[/\\]/).some((segment) => segment === '.' || segment === '..')
  ) {
    throw errors.invalidResourceName();
  }
}
export function blobProperties(op: Operation, fromContentHeaders: boolean): BlobProperties {
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

/** The response headers that describe a blob (or one of its snapshots), for Get Blob and Get Blob Properties. */
function blobHeaders(op: Operation, blob: BlobVersion, lease: LeaseRecord | undefined): void {
  const now = op.store.now();
  op.reply
    .header('etag', blob.etag)
    .header('last-modified', httpDate(blob.modified))
    .header('x-ms-creation-time', httpDate(blob.created))
    .header('x-ms-blob-type', blob.blobType ?? 'BlockBlob')
    .header('x-ms-server-encrypted', 'true')
    .header('accept-ranges', 'bytes')
    .header('content-type', blob.contentType);
  for (const [name, value] of Object.entries(leaseHeaders(lease, now))) op.reply.header(name, value);
  if ((blob.blobType ?? 'BlockBlob') === 'BlockBlob') {
    op.reply.header('x-ms-access-tier', blob.tier ?? 'Hot').header('x-ms-access-tier-inferred', String(blob.tier === undefined));
    if (blob.tierChanged !== undefined) op.reply.header('x-ms-access-tier-change-time', httpDate(blob.tierChanged));
  }
  if (blob.blobType === 'PageBlob') op.reply.header('x-ms-blob-sequence-number', String(blob.sequenceNumber ?? 0));
  if (blob.blobType === 'AppendBlob') {
    op.reply.header('x-ms-blob-committed-block-count', String(blob.appendCount ?? 0));
    if (blob.sealed) op.reply.header('x-ms-blob-sealed', 'true');
  }
  if (blob.tags && Object.keys(blob.tags).length) op.reply.header('x-ms-tag-count', String(Object.keys(blob.tags).length));
  if (blob.copy) {
    op.reply
      .header('x-ms-copy-id', blob.copy.id)
      .header('x-ms-copy-source', blob.copy.source)
      .header('x-ms-copy-status', blob.copy.status)
      .header('x-ms-copy-progress', blob.copy.progress)
      .header('x-ms-copy-completion-time', httpDate(blob.copy.completed));
  }
  if (blob.incrementalCopy) {
    op.reply.header('x-ms-incremental-copy', 'true').header('x-ms-copy-destination-snapshot', blob.incrementalCopy.destinationSnapshot);
  }
  if (blob.contentEncoding) op.reply.header('content-encoding', blob.contentEncoding);
  if (blob.contentLanguage) op.reply.header('content-language', blob.contentLanguage);
  if (blob.contentDisposition) op.reply.header('content-disposition', blob.contentDisposition);
  if (blob.cacheControl) op.reply.header('cache-control', blob.cacheControl);
  for (const [key, value] of Object.entries(blob.metadata)) op.reply.header(`x-ms-meta-${key}`, value);
  for (const [name, value] of Object.entries(op.responseHeaderOverrides)) op.reply.header(name, value);
}

export function writeResult(op: Operation, blob: BlobRecord): void {
  op.reply.header('etag', blob.etag).header('last-modified', httpDate(blob.modified)).header('x-ms-request-server-encrypted', 'true');
  if (blob.md5) op.reply.header('content-md5', blob.md5);
}

/** ETag and Last-Modified of an operation that changed a blob's record but not its content. */
export function changeResult(op: Operation, blob: BlobRecord): void {
  op.reply.header('etag', blob.etag).header('last-modified', httpDate(blob.modified));
}

/**
 * The condition a write to a blob lands on, checked before its body is read and again as
 * it commits: the conditional headers and the blob's lease. `If-None-Match: *` on an
 * existing blob is a 409 BlobAlreadyExists, as the service answers it.
 */
export function writePrecondition(op: Operation): (existing: BlobRecord | undefined) => void {
  const conditions = conditionsOf(op);
  return (existing) => {
    if (existing && conditions.ifNoneMatch === '*') throw errors.blobAlreadyExists();
    checkWriteConditions(conditions, existing);
    if (existing) checkLeaseCondition(op, existing.lease, op.store.now(), 'blob');
    else if (header(op, 'x-ms-lease-id')) throw errors.blobNotFound();
  };
}

/** A change of an existing blob's record (metadata, properties, tier, tags, lease): conditions and the lease first. */
function updateExisting(op: Operation, container: string, name: string, change: (blob: BlobRecord, now: number) => BlobRecord) {
  const conditions = conditionsOf(op);
  return op.store.updateBlob(container, name, (blob, now) => {
    checkWriteConditions(conditions, blob);
    checkLeaseCondition(op, blob.lease, now, 'blob');
    return change(blob, now);
  }) as Promise<BlobRecord>;
}

/** The same record with a new ETag and modification time. */
function touched(op: Operation, blob: BlobRecord, now: number): BlobRecord {
  return { ...blob, etag: op.store.newEtag(), modified: now };
}

const ACCESS_TIERS: readonly AccessTier[] = ['Hot', 'Cool', 'Cold', 'Archive'];

function accessTierHeader(op: Operation): AccessTier | undefined {
  const value = header(op, 'x-ms-access-tier');
  if (value === undefined) return undefined;
  const tier = ACCESS_TIERS.find((t) => t.toLowerCase() === value.toLowerCase());
  if (!tier) throw errors.invalidHeader('x-ms-access-tier', value);
  return tier;
}

/** What a new blob carries besides content and properties: x-ms-access-tier and x-ms-tags. */
export function newBlobExtras(op: Operation): WriteOptions['extra'] {
  const tier = accessTierHeader(op);
  const tags = tagsFromHeader(op);
  return { ...(tier ? { tier, tierChanged: op.store.now() } : {}), ...(tags ? { tags } : {}) };
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

/** The MD5 a request's body must have: `Content-MD5` (transport) or, on Put Blob, `x-ms-blob-content-md5`. */
export function expectedMd5(op: Operation, ...names: string[]): string | undefined {
  for (const name of names) {
    const value = header(op, name);
    if (value === undefined) continue;
    if (Buffer.from(value, 'base64').length !== 16) throw errors.invalidHeader(name, value);
    return value;
  }
  return undefined;
}

export async function putBlob(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('create');
  const type = header(op, 'x-ms-blob-type');
  if (!type) throw errors.missingHeader('x-ms-blob-type');
  if (type !== 'BlockBlob' && type !== 'AppendBlob' && type !== 'PageBlob') throw errors.invalidHeader('x-ms-blob-type', type);
  if (type === 'PageBlob') return putPageBlob(op, container, name);
  const expectedLength = Number(header(op, 'content-length') ?? NaN);
  if (expectedLength > op.limits.maxBlobBytes) throw errors.requestBodyTooLarge();
  if (type === 'AppendBlob' && expectedLength > 0) throw errors.invalidHeader('content-length', String(expectedLength));
  const precondition = writePrecondition(op);
  precondition(op.store.findBlob(container, name));
  const md5 = expectedMd5(op, 'content-md5', 'x-ms-blob-content-md5');
  const blob = await op.store.putBlob(container, name, body(op), {
    properties: blobProperties(op, true),
    metadata: metadataFromHeaders(op),
    limit: op.limits.maxBlobBytes,
    precondition,
    ...(md5 ? { expectedMd5: md5 } : {}),
    extra: { ...newBlobExtras(op), ...(type === 'AppendBlob' ? { blobType: type, tier: undefined, md5: '' } : {}) },
  });
  op.blobWritten();
  writeResult(op, blob);
  await op.reply.code(201).send();
}

/** Put Blob of a page blob: `x-ms-blob-content-length` zero bytes, no body (page-blob.ts). */
async function putPageBlob(op: Operation, container: string, name: string): Promise<void> {
  const { size, extra } = pageBlobCreation(op);
  const precondition = writePrecondition(op);
  precondition(op.store.findBlob(container, name));
  const tags = newBlobExtras(op)?.tags;
  const blob = await op.store.createPageBlob(container, name, size, {
    properties: blobProperties(op, true),
    metadata: metadataFromHeaders(op),
    limit: 0,
    precondition,
    extra: { ...extra, ...(tags ? { tags } : {}) },
  });
  op.blobWritten();
  writeResult(op, blob);
  await op.reply.code(201).send();
}

/** The blob a request addresses: the base blob, or the snapshot `?snapshot=` names. */
function addressedVersion(op: Operation, blob: BlobRecord): BlobVersion {
  const snapshot = op.query.get('snapshot');
  if (snapshot === null) return blob;
  const found = blob.snapshots?.find((s) => s.snapshot === snapshot);
  if (!found) throw errors.blobNotFound();
  return found;
}

/** Get Blob (GET, with ranges → 206) and Get Blob Properties (HEAD), of the blob or one of its snapshots. */
export async function readBlob(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('read');
  const base = op.store.getBlob(container, name);
  const blob = addressedVersion(op, base);
  const isBase = blob === base;
  checkReadLease(op, isBase ? base.lease : undefined, op.store.now());
  if (readConditions(op, blob) === 'not-modified') {
    op.reply.header('etag', blob.etag).header('last-modified', httpDate(blob.modified));
    await op.reply.code(304).send();
    return;
  }
  blobHeaders(op, blob, isBase ? base.lease : undefined);
  if (op.request.method === 'HEAD') {
    if (blob.md5) op.reply.header('content-md5', blob.md5);
    op.reply.header('content-length', String(blob.size));
    await op.reply.code(200).send();
    return;
  }
  if (blob.tier === 'Archive') throw errors.blobArchived();
  const range = requestedRange(op, blob.size);
  const path = op.store.dataPath(container, blob);
  const structured = structuredReply(op);
  if (!range) {
    if (blob.md5) op.reply.header('content-md5', blob.md5);
    await op.reply.code(200).send(content(op, path, { start: 0, end: blob.size - 1 }, structured));
    return;
  }
  op.reply.header('content-range', `bytes ${range.start}-${range.end}/${blob.size}`);
  const wantsMd5 = header(op, 'x-ms-range-get-content-md5') === 'true';
  const wantsCrc64 = header(op, 'x-ms-range-get-content-crc64') === 'true';
  if (wantsMd5 && wantsCrc64) throw errors.invalidHeader('x-ms-range-get-content-crc64', 'true');
  if (wantsCrc64) op.reply.header('x-ms-content-crc64', (await rangeDigest(path, range, 'x-ms-range-get-content-crc64', new Crc64())).toString('base64'));
  if (blob.md5) {
    if (wantsMd5) op.reply.header('content-md5', (await rangeDigest(path, range, 'x-ms-range-get-content-md5', createHash('md5'))).toString('base64'));
    op.reply.header('x-ms-blob-content-md5', blob.md5);
  }
  await op.reply.code(206).send(content(op, path, range, structured));
}

/** Whether a read asks for its content as a structured message (`x-ms-structured-body`, checksums.ts). */
function structuredReply(op: Operation): boolean {
  const asked = header(op, 'x-ms-structured-body');
  if (asked === undefined) return false;
  if (asked.toLowerCase() !== STRUCTURED_BODY.toLowerCase()) throw errors.invalidHeader('x-ms-structured-body', asked);
  return true;
}

/** Bytes `start`..`end` of a data file as the answer's body (wrapped when asked), with its length headers. */
function content(op: Operation, path: string, range: { start: number; end: number }, structured: boolean): Readable | string {
  const length = range.end - range.start + 1;
  const bytes = length === 0 ? Readable.from([]) : createReadStream(path, range);
  if (!structured) {
    op.reply.header('content-length', String(length));
    return length === 0 ? '' : bytes;
  }
  const message = wrapping(length);
  op.reply
    .header('content-length', String(message.messageLength))
    .header('x-ms-structured-body', STRUCTURED_BODY)
    .header('x-ms-structured-content-length', String(length));
  return bytes.pipe(message.stream);
}

function readConditions(op: Operation, blob: BlobVersion) {
  return checkReadConditions(conditionsOf(op), blob);
}

/** MD5 or CRC-64 of a range (x-ms-range-get-content-md5/-crc64, ranges up to 4 MiB as the service allows). */
async function rangeDigest(
  path: string,
  range: { start: number; end: number },
  asked: string,
  digest: { update(b: Buffer): unknown; digest(): Buffer },
): Promise<Buffer> {
  if (range.end - range.start + 1 > 4 * 1024 * 1024) throw errors.outOfRangeInput(asked);
  for await (const chunk of createReadStream(path, { start: range.start, end: range.end })) digest.update(chunk as Buffer);
  return digest.digest();
}

/**
 * Delete Blob: the blob (with `x-ms-delete-snapshots: include` if it has snapshots), only
 * its snapshots (`only`), or one snapshot (`?snapshot=`); conditions and the lease first.
 */
export async function deleteBlob(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('delete');
  const snapshot = op.query.get('snapshot');
  const deleteSnapshots = header(op, 'x-ms-delete-snapshots');
  if (deleteSnapshots !== undefined && deleteSnapshots !== 'include' && deleteSnapshots !== 'only') {
    throw errors.invalidHeader('x-ms-delete-snapshots', deleteSnapshots);
  }
  const conditions = conditionsOf(op);
  await op.store.updateBlob(container, name, (blob, now) => {
    if (snapshot !== null) {
      const target = addressedVersion(op, blob);
      checkWriteConditions(conditions, target);
      return { ...blob, snapshots: blob.snapshots!.filter((s) => s !== target) };
    }
    checkWriteConditions(conditions, blob);
    checkLeaseCondition(op, blob.lease, now, 'blob');
    const hasSnapshots = (blob.snapshots?.length ?? 0) > 0;
    if (deleteSnapshots === 'only') return { ...blob, snapshots: [] };
    if (hasSnapshots && deleteSnapshots !== 'include') throw errors.snapshotsPresent();
    return undefined;
  });
  await op.reply.code(202).send();
}

/** Set Blob Metadata: replaces the metadata (none given clears it). */
async function setBlobMetadata(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('write');
  const metadata = metadataFromHeaders(op);
  const blob = await updateExisting(op, container, name, (current, now) => {
    if (current.tier === 'Archive') throw errors.blobArchived();
    return { ...touched(op, current, now), metadata };
  });
  changeResult(op, blob);
  op.reply.header('x-ms-request-server-encrypted', 'true');
  await op.reply.code(200).send();
}

/** Get Blob Metadata: the metadata headers, ETag and Last-Modified. */
async function getBlobMetadata(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('read');
  const base = op.store.getBlob(container, name);
  const blob = addressedVersion(op, base);
  checkReadLease(op, blob === base ? base.lease : undefined, op.store.now());
  if (readConditions(op, blob) === 'not-modified') {
    await op.reply.code(304).send();
    return;
  }
  changeResult(op, blob as BlobRecord);
  for (const [key, value] of Object.entries(blob.metadata)) op.reply.header(`x-ms-meta-${key}`, value);
  await op.reply.code(200).send();
}

/** The headers of Set Blob Properties that replace the content properties as a set. */
const CONTENT_PROPERTY_HEADERS = [
  'x-ms-blob-content-type',
  'x-ms-blob-content-encoding',
  'x-ms-blob-content-language',
  'x-ms-blob-content-disposition',
  'x-ms-blob-cache-control',
  'x-ms-blob-content-md5',
];

/**
 * Set Blob Properties: the content headers are replaced as a set (one not given is
 * cleared, as the service does), and `x-ms-blob-content-md5` sets the stored MD5. A page
 * blob's resize or sequence number change (page-blob.ts) leaves them as they are unless
 * the request names one of them.
 */
async function setBlobProperties(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('write');
  const properties = blobProperties(op, false);
  const md5 = header(op, 'x-ms-blob-content-md5');
  if (md5 !== undefined && md5 !== '' && Buffer.from(md5, 'base64').length !== 16) throw errors.invalidHeader('x-ms-blob-content-md5', md5);
  const pageChange = pageBlobPropertyChange(op);
  const replacesContent = !pageChange || CONTENT_PROPERTY_HEADERS.some((name) => header(op, name) !== undefined);
  const conditions = conditionsOf(op);
  const change = (current: BlobRecord, now: number): BlobRecord => {
    checkWriteConditions(conditions, current);
    checkLeaseCondition(op, current.lease, now, 'blob');
    if (current.tier === 'Archive') throw errors.blobArchived();
    const changed = pageChange ? pageChange.change(current) : current;
    if (!replacesContent) return touched(op, changed, now);
    const { contentEncoding: _e, contentLanguage: _l, contentDisposition: _d, cacheControl: _c, ...rest } = changed;
    return { ...touched(op, rest as BlobRecord, now), ...properties, md5: md5 ?? '' };
  };
  const blob = pageChange?.edit
    ? await op.store.changePages(container, name, pageChange.edit, change)
    : ((await op.store.updateBlob(container, name, change)) as BlobRecord);
  changeResult(op, blob);
  if (blob.blobType === 'PageBlob') op.reply.header('x-ms-blob-sequence-number', String(blob.sequenceNumber ?? 0));
  await op.reply.code(200).send();
}

/** Get Page Ranges of the blob or of the snapshot `?snapshot=` names. */
async function pageRangesOf(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('read');
  const base = op.store.getBlob(container, name);
  const version = addressedVersion(op, base);
  checkReadLease(op, version === base ? base.lease : undefined, op.store.now());
  return getPageRanges(op, container, name, version);
}

/** Snapshot Blob: the blob as it is now, kept under a time stamp (`x-ms-snapshot`); metadata given replaces the copied one. */
async function snapshotBlob(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('create');
  const given = metadataFromHeaders(op);
  const conditions = conditionsOf(op);
  let taken = '';
  const blob = (await op.store.updateBlob(container, name, (current, now) => {
    checkWriteConditions(conditions, current);
    if (header(op, 'x-ms-lease-id')) checkLeaseCondition(op, current.lease, now, 'blob');
    if (current.tier === 'Archive') throw errors.blobArchived();
    taken = snapshotTime(now, current.snapshots ?? []);
    const { name: _n, lease: _l, snapshots = [], ...version } = current;
    const metadata = Object.keys(given).length ? given : version.metadata;
    return { ...current, snapshots: [...snapshots, { ...version, metadata, snapshot: taken }] };
  }))!;
  changeResult(op, blob);
  op.reply.header('x-ms-snapshot', taken).header('x-ms-request-server-encrypted', 'false');
  await op.reply.code(201).send();
}

/** The service's snapshot stamp (ISO time with 7 fractional digits), later than every earlier snapshot of the blob. */
export function snapshotTime(now: number, snapshots: SnapshotRecord[]): string {
  const stamp = (ticks: number) => `${new Date(Math.floor(ticks / 10_000)).toISOString().slice(0, 20)}${String(ticks % 10_000_000).padStart(7, '0')}Z`;
  let ticks = now * 10_000;
  const last = snapshots.at(-1)?.snapshot;
  while (last !== undefined && stamp(ticks) <= last) ticks++;
  return stamp(ticks);
}

/** Set Blob Tier: Hot, Cool, Cold or Archive; leaving Archive answers 202 (rehydration, done at once here). */
async function setBlobTier(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('write');
  const tier = accessTierHeader(op);
  if (!tier) throw errors.missingHeader('x-ms-access-tier');
  if (op.query.get('snapshot') !== null) throw errors.invalidQuery('snapshot');
  const { ifTags } = conditionsOf(op);
  let wasArchived = false;
  await op.store.updateBlob(container, name, (blob, now) => {
    if (header(op, 'x-ms-lease-id')) checkLeaseCondition(op, blob.lease, now, 'blob');
    if (ifTags) checkWriteConditions({ ifTags }, blob);
    if ((blob.blobType ?? 'BlockBlob') !== 'BlockBlob') throw errors.invalidBlobType();
    wasArchived = blob.tier === 'Archive';
    return blob.tier === tier ? blob : { ...blob, tier, tierChanged: now };
  });
  await op.reply.code(wasArchived && tier !== 'Archive' ? 202 : 200).send();
}

/** Lease Blob: acquire, renew, change, release, break (leases.ts); the blob's ETag does not change. */
async function leaseBlob(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('write');
  const request = leaseRequest(op);
  const conditions = conditionsOf(op);
  let answer: ReturnType<LeaseRequest['apply']> | undefined;
  const blob = (await op.store.updateBlob(container, name, (current, now) => {
    checkWriteConditions(conditions, current);
    answer = request.apply(current.lease, now);
    const { lease: _previous, ...rest } = current;
    return answer.lease ? { ...rest, lease: answer.lease } : rest;
  }))!;
  changeResult(op, blob);
  for (const [key, value] of Object.entries(answer!.headers)) op.reply.header(key, value);
  await op.reply.code(answer!.status).send();
}

export async function blobOperation(op: Operation, container: string, name: string): Promise<void> {
  if (!CONTAINER_NAME.test(container)) throw errors.invalidResourceName();
  checkBlobName(name);
  const comp = op.query.get('comp');
  const method = op.request.method;
  const read = method === 'GET' || method === 'HEAD';
  if (op.query.get('restype') === 'account' && comp === 'properties' && read) return getAccountInformation(op);
  await checkIncrementalCopyBlobOperation(op, container, name, (comp === null && (method === 'HEAD' || method === 'DELETE')) || comp === 'incrementalcopy');
  if (method === 'PUT' && comp === 'incrementalcopy') return incrementalCopyBlob(op, container, name);
  if (method === 'PUT' && comp === null) return header(op, 'x-ms-copy-source') === undefined ? putBlob(op, container, name) : copyBlob(op, container, name);
  if (method === 'PUT' && comp === 'block') return putBlock(op, container, name);
  if (method === 'PUT' && comp === 'blocklist') return putBlockList(op, container, name);
  if (method === 'GET' && comp === 'blocklist') return getBlockList(op, container, name);
  if (method === 'PUT' && comp === 'appendblock') return appendBlock(op, container, name);
  if (method === 'PUT' && comp === 'seal') return sealAppendBlob(op, container, name);
  if (method === 'PUT' && comp === 'page') return putPage(op, container, name);
  if (read && comp === 'pagelist') return pageRangesOf(op, container, name);
  if (read && comp === null) return readBlob(op, container, name);
  if (method === 'DELETE' && comp === null) return deleteBlob(op, container, name);
  if (method === 'PUT' && comp === 'metadata') return setBlobMetadata(op, container, name);
  if (read && comp === 'metadata') return getBlobMetadata(op, container, name);
  if (method === 'PUT' && comp === 'properties') return setBlobProperties(op, container, name);
  if (method === 'PUT' && comp === 'snapshot') return snapshotBlob(op, container, name);
  if (method === 'PUT' && comp === 'tier') return setBlobTier(op, container, name);
  if (method === 'PUT' && comp === 'lease') return leaseBlob(op, container, name);
  if (method === 'PUT' && comp === 'tags') return setBlobTags(op, container, name);
  if (method === 'GET' && comp === 'tags') return getBlobTags(op, container, name);
  if (method === 'PUT' && comp === 'copy') return abortCopyBlob(op, container, name);
  if (comp !== null) throw errors.invalidQuery('comp');
  throw errors.unsupportedOperation();
}
