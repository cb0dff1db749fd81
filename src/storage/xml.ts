/** The service's XML bodies (listings, errors) and the block list parser, via fast-xml-parser. */
import { XMLBuilder, XMLParser } from 'fast-xml-parser';
import type { BlobVersion, BlockRef, ContainerRecord } from './persistence/store.ts';

const builder = new XMLBuilder({ ignoreAttributes: false, attributeNamePrefix: '@', suppressEmptyNode: true, processEntities: true });
const DECLARATION = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>';

export function xml(document: Record<string, unknown>): string {
  return DECLARATION + builder.build(document);
}

export function httpDate(ms: number): string {
  return new Date(ms).toUTCString();
}

export function errorXml(error: { code: string; message: string; details: Record<string, string> }, requestId: string): string {
  return xml({
    Error: {
      Code: error.code,
      Message: `${error.message}\nRequestId:${requestId}\nTime:${new Date().toISOString()}`,
      ...error.details,
    },
  });
}

function metadataElement(metadata: Record<string, string>) {
  return Object.keys(metadata).length ? { Metadata: metadata } : { Metadata: '' };
}

export interface Page<T> {
  items: T[];
  nextMarker: string;
}

export function containerListXml(
  endpoint: string,
  page: Page<ContainerRecord>,
  query: { prefix: string; marker: string; maxResults: number; includeMetadata: boolean },
  /** The lease elements of a container (leaseElements, at the time of the listing). */
  lease: (container: ContainerRecord) => Record<string, string>,
): string {
  return xml({
    EnumerationResults: {
      '@ServiceEndpoint': endpoint,
      Prefix: query.prefix,
      ...(query.marker ? { Marker: query.marker } : {}),
      MaxResults: query.maxResults,
      Containers: {
        Container: page.items.map((c) => ({
          Name: c.name,
          Properties: {
            'Last-Modified': httpDate(c.modified),
            Etag: c.etag,
            ...lease(c),
            ...(c.publicAccess ? { PublicAccess: c.publicAccess } : {}),
            HasImmutabilityPolicy: false,
            HasLegalHold: false,
          },
          ...(query.includeMetadata ? metadataElement(c.metadata) : {}),
        })),
      },
      NextMarker: page.nextMarker,
    },
  });
}

/** One <Blob> of a listing: a blob or one of its snapshots. */
export interface ListedBlob {
  name: string;
  version: BlobVersion;
  snapshot?: string;
  /** Lease elements of the base blob (leaseElements); snapshots have none. */
  lease: Record<string, string>;
}

export interface BlobListInclude {
  includeMetadata: boolean;
  includeTags: boolean;
  includeCopy: boolean;
}

function blobItem(blob: ListedBlob, include: BlobListInclude) {
  const v = blob.version;
  const type = v.blobType ?? 'BlockBlob';
  const tagCount = Object.keys(v.tags ?? {}).length;
  return {
    Name: blob.name,
    ...(blob.snapshot ? { Snapshot: blob.snapshot } : {}),
    Properties: {
      'Creation-Time': httpDate(v.created),
      'Last-Modified': httpDate(v.modified),
      // Listings carry the ETag bare, as the service sends it (headers quote it).
      Etag: v.etag.replace(/^"|"$/g, ''),
      'Content-Length': v.size,
      'Content-Type': v.contentType,
      'Content-Encoding': v.contentEncoding ?? '',
      'Content-Language': v.contentLanguage ?? '',
      'Content-MD5': v.md5,
      'Cache-Control': v.cacheControl ?? '',
      'Content-Disposition': v.contentDisposition ?? '',
      BlobType: type,
      ...(blob.snapshot ? {} : blob.lease),
      ...(include.includeCopy && v.copy
        ? {
            CopyId: v.copy.id,
            CopyStatus: v.copy.status,
            CopySource: v.copy.source,
            CopyProgress: v.copy.progress,
            CopyCompletionTime: httpDate(v.copy.completed),
          }
        : {}),
      ServerEncrypted: true,
      ...(v.incrementalCopy ? { IncrementalCopy: true, ...(include.includeCopy ? { DestinationSnapshot: v.incrementalCopy.destinationSnapshot } : {}) } : {}),
      ...(type === 'BlockBlob'
        ? {
            AccessTier: v.tier ?? 'Hot',
            AccessTierInferred: v.tier === undefined,
            ...(v.tierChanged !== undefined ? { AccessTierChangeTime: httpDate(v.tierChanged) } : {}),
          }
        : {}),
      ...(type === 'PageBlob' ? { 'x-ms-blob-sequence-number': v.sequenceNumber ?? 0 } : {}),
      ...(tagCount ? { TagCount: tagCount } : {}),
    },
    ...(include.includeMetadata ? metadataElement(v.metadata) : {}),
    ...(include.includeTags && tagCount ? { Tags: tagSetElement(v.tags!) } : {}),
  };
}

export function blobListXml(
  endpoint: string,
  container: string,
  page: Page<ListedBlob | { prefix: string }>,
  query: { prefix: string; marker: string; maxResults: number; delimiter: string } & BlobListInclude,
): string {
  const blobs = page.items.filter((b): b is ListedBlob => 'version' in b);
  const prefixes = page.items.filter((b): b is { prefix: string } => 'prefix' in b);
  return xml({
    EnumerationResults: {
      '@ServiceEndpoint': endpoint,
      '@ContainerName': container,
      Prefix: query.prefix,
      Marker: query.marker,
      MaxResults: query.maxResults,
      ...(query.delimiter ? { Delimiter: query.delimiter } : {}),
      Blobs: {
        Blob: blobs.map((b) => blobItem(b, query)),
        BlobPrefix: prefixes.map((p) => ({ Name: p.prefix })),
      },
      NextMarker: page.nextMarker,
    },
  });
}

/** Get Block List's body; a list left undefined is left out (blocklisttype). */
export function blockListXml(committed: BlockRef[] | undefined, uncommitted: BlockRef[] | undefined): string {
  const blocks = (list: BlockRef[]) => ({ Block: list.map((b) => ({ Name: b.id, Size: b.size })) });
  return xml({
    BlockList: {
      ...(committed ? { CommittedBlocks: committed.length ? blocks(committed) : '' } : {}),
      ...(uncommitted ? { UncommittedBlocks: uncommitted.length ? blocks(uncommitted) : '' } : {}),
    },
  });
}

/** `<TagSet><Tag><Key/><Value/></Tag>…</TagSet>` of a blob's tags. */
function tagSetElement(tags: Record<string, string>) {
  return { TagSet: { Tag: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })) } };
}

export function tagsXml(tags: Record<string, string>): string {
  return xml({ Tags: Object.keys(tags).length ? tagSetElement(tags) : { TagSet: '' } });
}

/** Find Blobs by Tags' body: each blob with its container and the tags the expression named. */
export function foundBlobsXml(endpoint: string, where: string, found: Page<{ container: string; name: string; tags: Record<string, string> }>): string {
  return xml({
    EnumerationResults: {
      '@ServiceEndpoint': endpoint,
      Where: where,
      Blobs: {
        Blob: found.items.map((b) => ({ Name: b.name, ContainerName: b.container, Tags: tagSetElement(b.tags) })),
      },
      NextMarker: found.nextMarker,
    },
  });
}

/** A small XML request body (tags, ACL, service properties) as plain objects; null when it is not XML. */
export function parseXmlBody(body: string): Record<string, unknown> | null {
  try {
    const parsed = new XMLParser({ ignoreAttributes: true, parseTagValue: false, trimValues: false, isArray: (name) => LIST_ELEMENTS.has(name) }).parse(
      body,
      true,
    );
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** Elements that may repeat in request bodies: always read as arrays. */
const LIST_ELEMENTS = new Set(['Tag', 'SignedIdentifier', 'CorsRule']);

export type BlockListEntry = { id: string; from: 'Latest' | 'Committed' | 'Uncommitted' };

/** `<BlockList><Latest>id</Latest>…</BlockList>`, in document order; null when the body is no block list. */
export function parseBlockList(body: string): BlockListEntry[] | null {
  let parsed: unknown;
  try {
    parsed = new XMLParser({ ignoreAttributes: true, parseTagValue: false, preserveOrder: true }).parse(body);
  } catch {
    return null;
  }
  const root = (parsed as Record<string, unknown>[]).find((node) => 'BlockList' in node);
  if (!root) return null;
  const entries: BlockListEntry[] = [];
  for (const node of root.BlockList as Record<string, { '#text'?: string }[]>[]) {
    const [tag] = Object.keys(node);
    if (tag !== 'Latest' && tag !== 'Committed' && tag !== 'Uncommitted') return null;
    const id = node[tag]?.[0]?.['#text'] ?? '';
    entries.push({ id, from: tag });
  }
  return entries;
}
