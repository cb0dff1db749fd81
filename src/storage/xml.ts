/** The service's XML bodies (listings, errors) and the block list parser, via fast-xml-parser. */
import { XMLBuilder, XMLParser } from 'fast-xml-parser';
import type { BlobRecord, ContainerRecord } from './persistence/store.ts';

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
            LeaseStatus: 'unlocked',
            LeaseState: 'available',
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

export function blobListXml(
  endpoint: string,
  container: string,
  page: Page<BlobRecord | { prefix: string }>,
  query: { prefix: string; marker: string; maxResults: number; delimiter: string; includeMetadata: boolean },
): string {
  const blobs = page.items.filter((b): b is BlobRecord => 'file' in b);
  const prefixes = page.items.filter((b): b is { prefix: string } => 'prefix' in b && !('file' in b));
  return xml({
    EnumerationResults: {
      '@ServiceEndpoint': endpoint,
      '@ContainerName': container,
      Prefix: query.prefix,
      Marker: query.marker,
      MaxResults: query.maxResults,
      ...(query.delimiter ? { Delimiter: query.delimiter } : {}),
      Blobs: {
        Blob: blobs.map((b) => ({
          Name: b.name,
          Properties: {
            'Creation-Time': httpDate(b.created),
            'Last-Modified': httpDate(b.modified),
            Etag: b.etag,
            'Content-Length': b.size,
            'Content-Type': b.contentType,
            'Content-Encoding': b.contentEncoding ?? '',
            'Content-Language': b.contentLanguage ?? '',
            'Content-MD5': b.md5,
            'Cache-Control': b.cacheControl ?? '',
            'Content-Disposition': b.contentDisposition ?? '',
            BlobType: 'BlockBlob',
            LeaseStatus: 'unlocked',
            LeaseState: 'available',
            ServerEncrypted: true,
            AccessTier: 'Hot',
            AccessTierInferred: true,
          },
          ...(query.includeMetadata ? metadataElement(b.metadata) : {}),
        })),
        BlobPrefix: prefixes.map((p) => ({ Name: p.prefix })),
      },
      NextMarker: page.nextMarker,
    },
  });
}

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
