/**
 * Blob index tags: Set Blob Tags and Get Blob Tags (`comp=tags`), `x-ms-tags` on the
 * writes that create a blob, and Find Blobs by Tags (account and container level). Up to
 * ten tags; keys 1-128 and values 0-256 characters of letters, digits, space and `+-./:=_`,
 * as the service allows.
 */
import { errors } from '../errors.ts';
import { foundBlobsXml, parseXmlBody, tagsXml } from '../xml.ts';
import { header, page, smallBody, type Operation } from './context.ts';
import { checkWriteConditions, conditionsOf } from './conditions.ts';
import { checkLeaseCondition } from './leases.ts';
import { matchesTagCondition, parseTagCondition } from './tag-conditions.ts';

const MAX_TAGS = 10;
const TAG_TEXT = /^[A-Za-z0-9 +\-./:=_]*$/;
const MAX_TAGS_BYTES = 64 * 1024;

function checkTags(tags: Record<string, string>): Record<string, string> {
  const entries = Object.entries(tags);
  if (entries.length > MAX_TAGS) throw errors.invalidTag();
  for (const [key, value] of entries) {
    if (key.length < 1 || key.length > 128 || value.length > 256 || !TAG_TEXT.test(key) || !TAG_TEXT.test(value)) throw errors.invalidTag();
  }
  return tags;
}

/** `x-ms-tags`: tags as a URL query string (`a=1&b=2`); undefined when absent. */
export function tagsFromHeader(op: Operation): Record<string, string> | undefined {
  const raw = header(op, 'x-ms-tags');
  if (raw === undefined) return undefined;
  const tags: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(raw)) {
    if (Object.hasOwn(tags, key)) throw errors.invalidTag();
    tags[key] = value;
  }
  return checkTags(tags);
}

function parseTagsBody(body: string): Record<string, string> {
  const parsed = parseXmlBody(body);
  const root = parsed?.Tags as { TagSet?: { Tag?: { Key?: unknown; Value?: unknown }[] } | '' } | undefined;
  if (root === undefined) throw errors.invalidXml();
  const list = typeof root === 'object' && typeof root.TagSet === 'object' ? (root.TagSet.Tag ?? []) : [];
  const tags: Record<string, string> = {};
  for (const tag of list) {
    const key = typeof tag.Key === 'string' ? tag.Key : '';
    if (Object.hasOwn(tags, key)) throw errors.invalidTag();
    tags[key] = typeof tag.Value === 'string' ? tag.Value : '';
  }
  return checkTags(tags);
}

/** Set Blob Tags: replaces the tags; the blob's ETag and modification time stay. */
export async function setBlobTags(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('tags');
  const tags = parseTagsBody(await smallBody(op, MAX_TAGS_BYTES));
  const { ifTags } = conditionsOf(op);
  await op.store.updateBlob(container, name, (blob, now) => {
    if (ifTags) checkWriteConditions({ ifTags }, blob);
    if (header(op, 'x-ms-lease-id')) checkLeaseCondition(op, blob.lease, now, 'blob');
    const { tags: _previous, ...rest } = blob;
    return Object.keys(tags).length ? { ...rest, tags } : rest;
  });
  await op.reply.code(204).send();
}

export async function getBlobTags(op: Operation, container: string, name: string): Promise<void> {
  await op.authorize('tags');
  const blob = op.store.getBlob(container, name);
  const { ifTags } = conditionsOf(op);
  if (ifTags) checkWriteConditions({ ifTags }, blob);
  if (header(op, 'x-ms-lease-id')) checkLeaseCondition(op, blob.lease, op.store.now(), 'blob');
  await op.reply
    .code(200)
    .type('application/xml')
    .send(tagsXml(blob.tags ?? {}));
}

/**
 * Find Blobs by Tags: the blobs whose tags satisfy `where`, in the account or in one
 * container, paged by `marker` / `maxresults`; each with the tags the expression named.
 */
export async function findBlobsByTags(op: Operation, onlyContainer?: string): Promise<void> {
  await op.authorize('filter');
  const where = op.query.get('where');
  if (!where) throw errors.invalidQuery('where');
  const condition = parseTagCondition(where, 'where', true);
  const named = new Set<string>();
  const collect = (c: typeof condition): void => {
    if (c.kind === 'compare') {
      if (!c.key.startsWith('@')) named.add(c.key);
    } else {
      collect(c.left);
      collect(c.right);
    }
  };
  collect(condition);
  const raw = op.query.get('maxresults');
  const maxResults = raw === null ? 5000 : Number(raw);
  if (!/^\d+$/.test(raw ?? '5000') || maxResults < 1 || maxResults > 5000) throw errors.invalidQuery('maxresults');
  const containers = onlyContainer === undefined ? op.store.listContainers().map((c) => c.name) : [op.store.getContainer(onlyContainer).name];
  const found: { container: string; name: string; tags: Record<string, string> }[] = [];
  for (const container of containers) {
    for (const blob of op.store.listBlobs(container)) {
      if (!blob.tags || !matchesTagCondition(condition, blob.tags, container)) continue;
      found.push({ container, name: blob.name, tags: Object.fromEntries(Object.entries(blob.tags).filter(([key]) => named.has(key))) });
    }
  }
  // A space sorts below every character of a container name, so keys sort as containers then names do.
  const key = (b: { container: string; name: string }) => `${b.container} ${b.name}`;
  const result = page(found, key, op.query.get('marker') ?? '', maxResults);
  await op.reply
    .code(200)
    .type('application/xml')
    .send(foundBlobsXml(op.endpoint, where, result));
}
