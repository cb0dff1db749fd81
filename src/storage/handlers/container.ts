/**
 * Container operations: Create, Delete, Get Properties, Set/Get Metadata, Lease Container,
 * Set/Get Container ACL (public access and stored access policies), List Blobs and Find
 * Blobs by Tags within the container.
 */
import { blobListXml, httpDate, type ListedBlob } from '../xml.ts';
import { errors } from '../errors.ts';
import { header, listingQuery, metadataFromHeaders, page, type Operation } from './context.ts';
import type { ContainerRecord } from '../persistence/store.ts';
import { checkWriteConditions, conditionsOf } from './conditions.ts';
import { checkLeaseCondition, leaseElements, leaseHeaders, leaseRequest, type LeaseRequest } from './leases.ts';
import { getContainerAcl, publicAccessHeader, setContainerAcl } from './container-acl.ts';
import { getAccountInformation } from './service.ts';
import { findBlobsByTags } from './tags.ts';
import { submitBatch } from './batch.ts';

/** Container names as the service allows them: 3-63 of a-z, 0-9 and single hyphens, starting and ending with a letter or digit. */
export const CONTAINER_NAME = /^(?=.{3,63}$)[a-z0-9]+(-[a-z0-9]+)*$/;

function containerHeaders(op: Operation, record: ContainerRecord): void {
  op.reply.header('etag', record.etag).header('last-modified', httpDate(record.modified));
}

export async function createContainer(op: Operation, name: string): Promise<void> {
  await op.authorize('create');
  const publicAccess = publicAccessHeader(op);
  const created = await op.store.createContainer(name, metadataFromHeaders(op));
  const record = publicAccess ? await op.store.updateContainer(name, (c) => ({ ...c, publicAccess })) : created;
  containerHeaders(op, record);
  await op.reply.code(201).send();
}

/** The conditions a container write takes (If-Modified-Since, If-Unmodified-Since) and its lease. */
function checkContainerWrite(op: Operation, record: ContainerRecord, now: number, leaseRequired: boolean): void {
  const { ifModifiedSince, ifUnmodifiedSince, ifMatch, ifNoneMatch } = conditionsOf(op);
  // The service refuses ETag conditions on containers.
  if (ifMatch || ifNoneMatch) throw errors.invalidHeader(ifMatch ? 'If-Match' : 'If-None-Match');
  checkWriteConditions(
    { ...(ifModifiedSince !== undefined ? { ifModifiedSince } : {}), ...(ifUnmodifiedSince !== undefined ? { ifUnmodifiedSince } : {}) },
    record,
  );
  if (leaseRequired || header(op, 'x-ms-lease-id')) checkLeaseCondition(op, record.lease, now, 'container');
}

export async function deleteContainer(op: Operation, name: string): Promise<void> {
  await op.authorize('delete');
  checkContainerWrite(op, op.store.getContainer(name), op.store.now(), true);
  await op.store.deleteContainer(name);
  await op.reply.code(202).send();
}

export async function getContainerProperties(op: Operation, name: string): Promise<void> {
  await op.authorize('read');
  const record = op.store.getContainer(name);
  checkReadLease(op, record);
  containerHeaders(op, record);
  for (const [key, value] of Object.entries(record.metadata)) op.reply.header(`x-ms-meta-${key}`, value);
  for (const [key, value] of Object.entries(leaseHeaders(record.lease, op.store.now()))) op.reply.header(key, value);
  if (record.publicAccess) op.reply.header('x-ms-blob-public-access', record.publicAccess);
  op.reply.header('x-ms-has-immutability-policy', 'false').header('x-ms-has-legal-hold', 'false');
  await op.reply.code(200).send();
}

/** A read of a container that names a lease must name the active one. */
function checkReadLease(op: Operation, record: ContainerRecord): void {
  if (header(op, 'x-ms-lease-id')) checkLeaseCondition(op, record.lease, op.store.now(), 'container');
}

async function getContainerMetadata(op: Operation, name: string): Promise<void> {
  await op.authorize('read');
  const record = op.store.getContainer(name);
  checkReadLease(op, record);
  containerHeaders(op, record);
  for (const [key, value] of Object.entries(record.metadata)) op.reply.header(`x-ms-meta-${key}`, value);
  await op.reply.code(200).send();
}

/** Set Container Metadata: replaces the metadata; If-Modified-Since and the lease as the service checks them. */
async function setContainerMetadata(op: Operation, name: string): Promise<void> {
  await op.authorize('write');
  const metadata = metadataFromHeaders(op);
  if (conditionsOf(op).ifUnmodifiedSince !== undefined) throw errors.invalidHeader('If-Unmodified-Since');
  const record = await op.store.updateContainer(name, (current, now) => {
    checkContainerWrite(op, current, now, false);
    return { ...current, metadata, etag: op.store.newEtag(), modified: now };
  });
  containerHeaders(op, record);
  await op.reply.code(200).send();
}

/** Lease Container: acquire, renew, change, release, break; the container's ETag does not change. */
async function leaseContainer(op: Operation, name: string): Promise<void> {
  await op.authorize('write');
  const request = leaseRequest(op);
  let answer: ReturnType<LeaseRequest['apply']> | undefined;
  const record = await op.store.updateContainer(name, (current, now) => {
    const { ifModifiedSince, ifUnmodifiedSince } = conditionsOf(op);
    checkWriteConditions(
      { ...(ifModifiedSince !== undefined ? { ifModifiedSince } : {}), ...(ifUnmodifiedSince !== undefined ? { ifUnmodifiedSince } : {}) },
      current,
    );
    answer = request.apply(current.lease, now);
    const { lease: _previous, ...rest } = current;
    return answer.lease ? { ...rest, lease: answer.lease } : rest;
  });
  containerHeaders(op, record);
  for (const [key, value] of Object.entries(answer!.headers)) op.reply.header(key, value);
  await op.reply.code(answer!.status).send();
}

/** List Blobs, flat or with a delimiter (virtual folders as <BlobPrefix>), paged; `include` snapshots, metadata, tags, copy. */
export async function listBlobs(op: Operation, name: string): Promise<void> {
  await op.authorize('list');
  const query = { ...listingQuery(op), delimiter: op.query.get('delimiter') ?? '' };
  const now = op.store.now();
  const entries: (ListedBlob | { prefix: string })[] = [];
  const seenPrefixes = new Set<string>();
  for (const blob of op.store.listBlobs(name)) {
    if (!blob.name.startsWith(query.prefix)) continue;
    const cut = query.delimiter ? blob.name.indexOf(query.delimiter, query.prefix.length) : -1;
    if (cut < 0) {
      const lease = leaseElements(blob.lease, now);
      if (query.includeSnapshots) {
        for (const snapshot of blob.snapshots ?? []) entries.push({ name: blob.name, version: snapshot, snapshot: snapshot.snapshot, lease });
      }
      entries.push({ name: blob.name, version: blob, lease });
      continue;
    }
    const prefix = blob.name.slice(0, cut + query.delimiter.length);
    if (!seenPrefixes.has(prefix)) {
      seenPrefixes.add(prefix);
      entries.push({ prefix });
    }
  }
  const result = page(entries, (e) => ('version' in e ? e.name : e.prefix), query.marker, query.maxResults);
  await op.reply
    .code(200)
    .type('application/xml')
    .send(blobListXml(op.endpoint, name, result, query));
}

export async function containerOperation(op: Operation, name: string): Promise<void> {
  if (!CONTAINER_NAME.test(name)) throw errors.invalidResourceName();
  const method = op.request.method;
  const comp = op.query.get('comp');
  const read = method === 'GET' || method === 'HEAD';
  const restype = op.query.get('restype');
  if (restype === 'account' && comp === 'properties' && read) return getAccountInformation(op);
  if (restype !== 'container') throw errors.invalidUri();
  if (comp === 'list' && method === 'GET') return listBlobs(op, name);
  if (comp === 'blobs' && method === 'GET') return findBlobsByTags(op, name);
  if (comp === 'batch' && method === 'POST') return submitBatch(op);
  if (comp === 'metadata' && method === 'PUT') return setContainerMetadata(op, name);
  if (comp === 'metadata' && read) return getContainerMetadata(op, name);
  if (comp === 'lease' && method === 'PUT') return leaseContainer(op, name);
  if (comp === 'acl' && method === 'PUT') return setContainerAcl(op, name);
  if (comp === 'acl' && read) return getContainerAcl(op, name);
  if (comp !== null) throw errors.invalidQuery('comp');
  if (method === 'PUT') return createContainer(op, name);
  if (method === 'DELETE') return deleteContainer(op, name);
  if (read) return getContainerProperties(op, name);
  throw errors.unsupportedOperation();
}
