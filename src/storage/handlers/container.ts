import { blobListXml, httpDate } from '../xml.ts';
import { errors } from '../errors.ts';
import { listingQuery, metadataFromHeaders, page, type Operation } from './context.ts';
import type { BlobRecord, ContainerRecord } from '../persistence/store.ts';

/** Container names as the service allows them: 3-63 of a-z, 0-9 and single hyphens, starting and ending with a letter or digit. */
export const CONTAINER_NAME = /^(?=.{3,63}$)[a-z0-9]+(-[a-z0-9]+)*$/;

function containerHeaders(op: Operation, record: ContainerRecord): void {
  op.reply.header('etag', record.etag).header('last-modified', httpDate(record.modified));
}

export async function createContainer(op: Operation, name: string): Promise<void> {
  await op.authorize('create');
  const record = await op.store.createContainer(name, metadataFromHeaders(op));
  containerHeaders(op, record);
  await op.reply.code(201).send();
}

export async function deleteContainer(op: Operation, name: string): Promise<void> {
  await op.authorize('delete');
  await op.store.deleteContainer(name);
  await op.reply.code(202).send();
}

export async function getContainerProperties(op: Operation, name: string): Promise<void> {
  await op.authorize('read');
  const record = op.store.getContainer(name);
  containerHeaders(op, record);
  for (const [key, value] of Object.entries(record.metadata)) op.reply.header(`x-ms-meta-${key}`, value);
  op.reply.header('x-ms-lease-status', 'unlocked').header('x-ms-lease-state', 'available');
  await op.reply.code(200).send();
}

/** List Blobs, flat or with a delimiter (virtual folders as <BlobPrefix>), paged. */
export async function listBlobs(op: Operation, name: string): Promise<void> {
  await op.authorize('list');
  const query = { ...listingQuery(op), delimiter: op.query.get('delimiter') ?? '' };
  const entries: (BlobRecord | { prefix: string })[] = [];
  const seenPrefixes = new Set<string>();
  for (const blob of op.store.listBlobs(name)) {
    if (!blob.name.startsWith(query.prefix)) continue;
    const cut = query.delimiter ? blob.name.indexOf(query.delimiter, query.prefix.length) : -1;
    if (cut < 0) {
      entries.push(blob);
      continue;
    }
    const prefix = blob.name.slice(0, cut + query.delimiter.length);
    if (!seenPrefixes.has(prefix)) {
      seenPrefixes.add(prefix);
      entries.push({ prefix });
    }
  }
  const result = page(entries, (e) => ('file' in e ? e.name : e.prefix), query.marker, query.maxResults);
  await op.reply
    .code(200)
    .type('application/xml')
    .send(blobListXml(op.endpoint, name, result, query));
}

export async function containerOperation(op: Operation, name: string): Promise<void> {
  if (!CONTAINER_NAME.test(name)) throw errors.invalidResourceName();
  const method = op.request.method;
  const comp = op.query.get('comp');
  if (op.query.get('restype') !== 'container') throw errors.invalidUri();
  if (comp === 'list' && method === 'GET') return listBlobs(op, name);
  if (comp !== null) throw errors.invalidQuery('comp');
  if (method === 'PUT') return createContainer(op, name);
  if (method === 'DELETE') return deleteContainer(op, name);
  if (method === 'GET' || method === 'HEAD') return getContainerProperties(op, name);
  throw errors.unsupportedOperation();
}
