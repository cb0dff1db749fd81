/**
 * Page blobs: created by Put Blob with `x-ms-blob-type: PageBlob` and
 * `x-ms-blob-content-length` (all zero), written and cleared in 512-byte pages by Put Page
 * (`x-ms-page-write: update|clear`; update from a body or, with `x-ms-copy-source`, from a
 * range of a source: Put Page From URL), described by Get Page Ranges (and its diff against
 * a snapshot, `prevsnapshot`), resized and renumbered by Set Blob Properties
 * (`x-ms-blob-content-length`, `x-ms-sequence-number-action`). Every write takes the blob
 * conditions, the lease and the sequence number conditions `x-ms-if-sequence-number-le|lt|eq`.
 */
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { errors, StorageError } from '../errors.ts';
import { httpDate, xml } from '../xml.ts';
import type { BlobRecord, BlobVersion, PageEdit, WriteOptions } from '../persistence/store.ts';
import { PAGE_SIZE, rangesInBoth, rangesOutside, rangesWithin, withoutRange, withRange, type PageRange } from '../persistence/page-ranges.ts';
import { body, header, type Operation } from './context.ts';
import { checkWriteConditions, conditionsOf } from './conditions.ts';
import { checkLeaseCondition } from './leases.ts';
import { expectedMd5 } from './blob.ts';
import { openSource, sourceRange } from './copy.ts';

/** Largest page blob the service allows (8 TiB), and the most one Put Page update writes (4 MiB). */
const MAX_PAGE_BLOB_BYTES = 8 * 1024 ** 4;
const MAX_PAGE_WRITE_BYTES = 4 * 1024 * 1024;
/** Sequence numbers are 0 to 2^63 - 1 at the service; here they are kept exactly up to 2^53 - 1. */
const MAX_SEQUENCE_NUMBER = Number.MAX_SAFE_INTEGER;

const invalidPageRange = () => new StorageError(416, 'InvalidPageRange', 'The page range specified is invalid.');
const sequenceNumberConditionNotMet = () => new StorageError(412, 'SequenceNumberConditionNotMet', 'The sequence number condition specified was not met.');

/** A non-negative whole number header, or undefined when absent; `400 InvalidHeaderValue` otherwise. */
function countHeader(op: Operation, name: string, max: number): number | undefined {
  const raw = header(op, name);
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) > max) throw errors.invalidHeader(name, raw);
  return Number(raw);
}

/** A page blob size: a multiple of 512 up to 8 TiB. */
function pageBlobSize(op: Operation): number | undefined {
  const size = countHeader(op, 'x-ms-blob-content-length', MAX_PAGE_BLOB_BYTES);
  if (size !== undefined && size % PAGE_SIZE !== 0) throw errors.invalidHeader('x-ms-blob-content-length', String(size));
  return size;
}

/** Put Blob of a page blob: its size and sequence number; the body must be empty. */
export function pageBlobCreation(op: Operation): { size: number; extra: WriteOptions['extra'] } {
  const size = pageBlobSize(op);
  if (size === undefined) throw errors.missingHeader('x-ms-blob-content-length');
  const length = header(op, 'content-length');
  if (length !== undefined && length !== '0') throw errors.invalidHeader('Content-Length', length);
  const sequenceNumber = countHeader(op, 'x-ms-blob-sequence-number', MAX_SEQUENCE_NUMBER) ?? 0;
  return { size, extra: { blobType: 'PageBlob', tier: undefined, md5: '', pages: [], sequenceNumber } };
}

function checkPageBlob(blob: BlobVersion): void {
  if (blob.blobType !== 'PageBlob') throw errors.blobTypeMismatch();
}

/** `x-ms-if-sequence-number-le`, `-lt`, `-eq`, checked as the write commits. */
function sequenceNumberCondition(op: Operation): (blob: BlobRecord) => void {
  const le = countHeader(op, 'x-ms-if-sequence-number-le', MAX_SEQUENCE_NUMBER);
  const lt = countHeader(op, 'x-ms-if-sequence-number-lt', MAX_SEQUENCE_NUMBER);
  const eq = countHeader(op, 'x-ms-if-sequence-number-eq', MAX_SEQUENCE_NUMBER);
  return (blob) => {
    const current = blob.sequenceNumber ?? 0;
    if ((le !== undefined && current > le) || (lt !== undefined && current >= lt) || (eq !== undefined && current !== eq)) {
      throw sequenceNumberConditionNotMet();
    }
  };
}

/** The pages a Put Page names: `x-ms-range` (preferred) or `Range`, `bytes=start-end`, whole pages. */
function pageRange(op: Operation): { start: number; end: number } {
  const raw = header(op, 'x-ms-range') ?? header(op, 'range');
  if (raw === undefined) throw errors.missingHeader('Range');
  const match = /^bytes=(\d+)-(\d+)$/.exec(raw.trim());
  if (!match) throw errors.invalidHeader(header(op, 'x-ms-range') === undefined ? 'Range' : 'x-ms-range', raw);
  const start = Number(match[1]);
  const end = Number(match[2]);
  if (end < start || start % PAGE_SIZE !== 0 || (end + 1) % PAGE_SIZE !== 0) throw invalidPageRange();
  return { start, end };
}

/** Reads a Put Page body (or its source range) whole: at most 4 MiB, exactly the range's length. */
async function pageBytes(op: Operation, length: number): Promise<Buffer> {
  if (length > MAX_PAGE_WRITE_BYTES) throw errors.requestBodyTooLarge();
  const fromUrl = header(op, 'x-ms-copy-source') !== undefined;
  const source = fromUrl ? (await openSource(op, sourceRange(op))).read() : body(op);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of source) {
    size += (chunk as Buffer).length;
    if (size > length) {
      source.destroy();
      break;
    }
    chunks.push(chunk as Buffer);
  }
  if (size !== length) throw fromUrl ? errors.invalidHeader('x-ms-source-range') : errors.invalidHeader('Content-Length', String(size));
  return Buffer.concat(chunks);
}

/** Put Page (and Put Page From URL): update or clear whole pages within the blob's size. */
export async function putPage(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('write');
  op.store.getContainer(container);
  const write = header(op, 'x-ms-page-write');
  if (write === undefined) throw errors.missingHeader('x-ms-page-write');
  if (write !== 'update' && write !== 'clear') throw errors.invalidHeader('x-ms-page-write', write);
  const { start, end } = pageRange(op);
  const conditions = conditionsOf(op);
  const sequenceCondition = sequenceNumberCondition(op);
  const check = (blob: BlobRecord) => {
    checkWriteConditions(conditions, blob);
    checkLeaseCondition(op, blob.lease, op.store.now(), 'blob');
    checkPageBlob(blob);
    sequenceCondition(blob);
    if (end >= blob.size) throw invalidPageRange();
  };
  // Refused before the body is read when it can be; checked again as the write commits.
  check(op.store.getBlob(container, name));
  let edit: PageEdit;
  let md5: string | undefined;
  if (write === 'update') {
    const bytes = await pageBytes(op, end - start + 1);
    md5 = createHash('md5').update(bytes).digest('base64');
    const expected = expectedMd5(op, 'content-md5', 'x-ms-source-content-md5');
    if (expected && expected !== md5) throw errors.md5Mismatch();
    edit = { write: 'update', start, bytes };
  } else {
    const length = header(op, 'content-length');
    if (length !== undefined && length !== '0') throw errors.invalidHeader('Content-Length', length);
    edit = { write: 'clear', start, end };
  }
  const blob = await op.store.changePages(container, name, edit, (current, now) => {
    check(current);
    const pages = write === 'update' ? withRange(current.pages ?? [], start, end) : withoutRange(current.pages ?? [], start, end);
    return { ...current, pages, md5: '', etag: op.store.newEtag(), modified: now };
  });
  op.reply
    .header('etag', blob.etag)
    .header('last-modified', httpDate(blob.modified))
    .header('x-ms-blob-sequence-number', String(blob.sequenceNumber ?? 0))
    .header('x-ms-request-server-encrypted', 'true');
  if (md5) op.reply.header('content-md5', md5);
  await op.reply.code(201).send();
}

/**
 * Set Blob Properties' page blob part: `x-ms-blob-content-length` (resize: pages past the
 * new end are dropped, new ones read as zero) and `x-ms-sequence-number-action` (`max`,
 * `update` with `x-ms-blob-sequence-number`, `increment` without). Undefined when the
 * request names neither.
 */
export function pageBlobPropertyChange(op: Operation): { edit?: PageEdit; change: (blob: BlobRecord) => BlobRecord } | undefined {
  const size = pageBlobSize(op);
  const action = header(op, 'x-ms-sequence-number-action');
  if (size === undefined && action === undefined) return undefined;
  const given = countHeader(op, 'x-ms-blob-sequence-number', MAX_SEQUENCE_NUMBER);
  if (action !== undefined && !['max', 'update', 'increment'].includes(action)) throw errors.invalidHeader('x-ms-sequence-number-action', action);
  if ((action === 'max' || action === 'update') && given === undefined) throw errors.missingHeader('x-ms-blob-sequence-number');
  if (action === 'increment' && given !== undefined) throw errors.invalidHeader('x-ms-blob-sequence-number', String(given));
  return {
    ...(size !== undefined ? { edit: { write: 'resize', size } } : {}),
    change: (blob) => {
      checkPageBlob(blob);
      let sequenceNumber = blob.sequenceNumber ?? 0;
      if (action === 'max') sequenceNumber = Math.max(sequenceNumber, given!);
      if (action === 'update') sequenceNumber = given!;
      if (action === 'increment') {
        if (sequenceNumber >= MAX_SEQUENCE_NUMBER) {
          throw new StorageError(
            409,
            'SequenceNumberIncrementTooLarge',
            'The sequence number increment cannot be performed because it would result in overflow of the sequence number.',
          );
        }
        sequenceNumber++;
      }
      return size === undefined
        ? { ...blob, sequenceNumber }
        : { ...blob, sequenceNumber, size, pages: withoutRange(blob.pages ?? [], size, Number.MAX_SAFE_INTEGER) };
    },
  };
}

/** The pages of `[start, end]` whose bytes differ between two data files. */
async function changedPages(paths: [string, string], ranges: PageRange[]): Promise<PageRange[]> {
  const [now, before] = await Promise.all(paths.map((path) => open(path, 'r')));
  try {
    let changed: PageRange[] = [];
    const a = Buffer.alloc(PAGE_SIZE);
    const b = Buffer.alloc(PAGE_SIZE);
    for (const [start, end] of ranges) {
      for (let at = start; at < end; at += PAGE_SIZE) {
        await Promise.all([now!.read(a, 0, PAGE_SIZE, at), before!.read(b, 0, PAGE_SIZE, at)]);
        if (!a.equals(b)) changed = withRange(changed, at, at + PAGE_SIZE - 1);
      }
    }
    return changed;
  } finally {
    await Promise.all([now!.close(), before!.close()]);
  }
}

/**
 * Get Page Ranges: the written pages of the blob (or `?snapshot=`), within `Range` when
 * given, paged by `maxresults`/`marker`. With `prevsnapshot`, the diff: pages written since
 * that snapshot (new, or whose bytes differ) as `PageRange`, pages cleared since as `ClearRange`.
 */
export async function getPageRanges(op: Operation, container: string, name: string, version: BlobVersion): Promise<void> {
  checkPageBlob(version);
  const rangeHeader = header(op, 'x-ms-range') ?? header(op, 'range');
  let within: { start: number; end: number } = { start: 0, end: Math.max(version.size - 1, 0) };
  if (rangeHeader !== undefined) {
    const match = /^bytes=(\d+)-(\d*)$/.exec(rangeHeader.trim());
    if (!match) throw errors.invalidHeader('x-ms-range', rangeHeader);
    within = { start: Number(match[1]), end: match[2] ? Number(match[2]) : within.end };
  }
  let written = rangesWithin(version.pages ?? [], within.start, within.end);
  let cleared: PageRange[] = [];
  const previousStamp = op.query.get('prevsnapshot');
  if (previousStamp !== null) {
    const previous = op.store.getBlob(container, name).snapshots?.find((s) => s.snapshot === previousStamp);
    if (!previous) throw new StorageError(409, 'PreviousSnapshotNotFound', 'The previous snapshot is not found.');
    const before = rangesWithin(previous.pages ?? [], within.start, within.end);
    const common = rangesInBoth(written, before);
    const differing =
      previous.file === version.file ? [] : await changedPages([op.store.dataPath(container, version), op.store.dataPath(container, previous)], common);
    cleared = rangesOutside(before, written);
    written = differing.reduce((all, [a, b]) => withRange(all, a, b), rangesOutside(written, before));
  }
  const maxResults = maxResultsQuery(op);
  const marker = op.query.get('marker') ?? '0';
  if (!/^\d+$/.test(marker)) throw errors.invalidQuery('marker');
  const all = [...written.map((r) => ['PageRange', r] as const), ...cleared.map((r) => ['ClearRange', r] as const)]
    .filter(([, [start]]) => start >= Number(marker))
    .sort((x, y) => x[1][0] - y[1][0]);
  const shown = all.slice(0, maxResults);
  const next = all[maxResults];
  const element = (kind: 'PageRange' | 'ClearRange') => shown.filter(([k]) => k === kind).map(([, [Start, End]]) => ({ Start, End }));
  op.reply
    .header('etag', version.etag)
    .header('last-modified', httpDate(version.modified))
    .header('x-ms-blob-content-length', String(version.size))
    .type('application/xml');
  await op.reply.code(200).send(
    xml({
      PageList: {
        ...(element('PageRange').length ? { PageRange: element('PageRange') } : {}),
        ...(element('ClearRange').length ? { ClearRange: element('ClearRange') } : {}),
        ...(next ? { NextMarker: String(next[1][0]) } : {}),
      },
    }),
  );
}

/** `maxresults` of Get Page Ranges: a positive whole number (every range when absent). */
function maxResultsQuery(op: Operation): number {
  const raw = op.query.get('maxresults');
  if (raw === null) return Number.MAX_SAFE_INTEGER;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw errors.invalidQuery('maxresults');
  return Number(raw);
}
