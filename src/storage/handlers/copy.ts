/**
 * Copies: Copy Blob (`x-ms-copy-source`, answered 202; with `x-ms-requires-sync: true`
 * it is Copy Blob From URL), Put Blob From URL (the same with `x-ms-blob-type`, 201), Put
 * Block From URL (`comp=block` with a source and `x-ms-source-range`) and Abort Copy Blob.
 * A source in this account that the caller may read itself (Shared Key, a data role) is
 * read from disk; any other source (another server, or a URL carrying its own SAS) is
 * fetched over HTTP with its own credentials (`x-ms-copy-source-authorization`), so the
 * source decides who may read it. Every copy completes before the answer, so its status is
 * `success` at once and there is never a pending copy to abort.
 */
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { errors, StorageError } from '../errors.ts';
import type { BlobProperties, WriteOptions } from '../persistence/store.ts';
import { header, metadataFromHeaders, type Operation } from './context.ts';
import { blobProperties, expectedMd5, newBlobExtras, writePrecondition, writeResult } from './blob.ts';
import { checkLeaseCondition } from './leases.ts';

interface CopySource {
  body: Readable;
  size: number;
  properties: BlobProperties;
  metadata: Record<string, string>;
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
  if (version.tier === 'Archive') throw errors.blobArchived();
  const start = range?.start ?? 0;
  const end = Math.min(range?.end ?? version.size - 1, version.size - 1);
  if (range && start >= version.size) throw errors.invalidRange();
  const { contentType, contentEncoding, contentLanguage, contentDisposition, cacheControl } = version;
  return {
    body: end < start ? Readable.from([]) : createReadStream(op.store.dataPath(source.container, version), { start, end }),
    size: Math.max(0, end - start + 1),
    properties: { contentType, ...{ contentEncoding, contentLanguage, contentDisposition, cacheControl } },
    metadata: version.metadata,
  };
}

/** Fetches a source over HTTP with its own credentials; the source's refusal is CannotVerifyCopySource. */
async function readRemote(op: Operation, url: URL, range: { start: number; end: number } | null): Promise<CopySource> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw errors.invalidHeader('x-ms-copy-source', url.href);
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
  return { body: answer.body, size: Number(h('content-length') ?? 0), properties, metadata };
}

export async function openSource(op: Operation, range: { start: number; end: number } | null): Promise<CopySource> {
  const raw = header(op, 'x-ms-copy-source')!;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw errors.invalidHeader('x-ms-copy-source', raw);
  }
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
  if (source.size > op.limits.maxBlobBytes) {
    source.body.destroy();
    throw errors.requestBodyTooLarge();
  }
  const copyId = randomUUID();
  const now = op.store.now();
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
      ...(putFromUrl
        ? {}
        : { copy: { id: copyId, source: header(op, 'x-ms-copy-source')!, status: 'success', progress: `${source.size}/${source.size}`, completed: now } }),
    },
  };
  const md5 = expectedMd5(op, 'x-ms-source-content-md5');
  if (md5) options.expectedMd5 = md5;
  const blob = await op.store.putBlob(container, name, source.body, options);
  op.blobWritten();
  if (putFromUrl) {
    writeResult(op, blob);
    await op.reply.code(201).send();
    return;
  }
  op.reply
    .header('etag', blob.etag)
    .header('last-modified', new Date(blob.modified).toUTCString())
    .header('x-ms-copy-id', copyId)
    .header('x-ms-copy-status', 'success');
  await op.reply.code(202).send();
}

/** Put Block From URL: stages a block from a range of a source blob. */
export async function putBlockFromUrl(op: Operation, container: string, name: string, blockId: string): Promise<void> {
  await op.authorize('write');
  op.store.getContainer(container);
  const existing = op.store.findBlob(container, name);
  if (existing) checkLeaseCondition(op, existing.lease, op.store.now(), 'blob');
  const source = await openSource(op, sourceRange(op));
  const staged = await op.store.putBlock(container, name, blockId, source.body, op.limits.maxBlockBytes, expectedMd5(op, 'x-ms-source-content-md5'));
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
