/**
 * The blob storage page's operations, through the storage SDK with the
 * account's Shared Key (the SDK signs; nothing here builds a signature).
 */
import { readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import type { BlobItem, BlobServiceClient } from '@azure/storage-blob';
import { openBlobServiceClient } from '../common/blob-service.ts';
import { InvalidInputError } from './errors.ts';

/** Blobs per listing page: enough for a screen, small enough for 10,000-blob containers. */
export const BLOB_PAGE_SIZE = 200;

export interface ContainerSummary {
  name: string;
  lastModified: string;
}

export interface BlobSummary {
  name: string;
  size: number;
  contentType: string;
  lastModified: string;
}

export interface BlobDownload {
  contentType: string;
  contentLength: number;
  body: Readable;
}

export function openBlobService(connectionString: string, caFile: string): BlobServiceClient {
  const ca = caFile ? readFileSync(caFile, 'utf8') : undefined;
  try {
    return openBlobServiceClient(connectionString, ca);
  } catch (err) {
    throw new InvalidInputError(`the storage connection string is not usable: ${(err as Error).message}`);
  }
}

export class BlobBrowser {
  constructor(private readonly service: BlobServiceClient) {}

  async listContainers(): Promise<ContainerSummary[]> {
    const out: ContainerSummary[] = [];
    for await (const c of this.service.listContainers()) out.push({ name: c.name, lastModified: c.properties.lastModified.toISOString() });
    return out;
  }

  async createContainer(name: string): Promise<void> {
    await this.service.getContainerClient(name).create();
  }

  async deleteContainer(name: string): Promise<void> {
    await this.service.getContainerClient(name).delete();
  }

  /** One page of a container's blobs, from `marker` (the previous page's `next`). */
  async listBlobs(container: string, prefix: string, marker: string | undefined): Promise<{ blobs: BlobSummary[]; next: string | null }> {
    const pages = this.service
      .getContainerClient(container)
      .listBlobsFlat({ prefix })
      .byPage({ maxPageSize: BLOB_PAGE_SIZE, ...(marker ? { continuationToken: marker } : {}) });
    const page = (await pages.next()).value;
    if (!page) return { blobs: [], next: null };
    const blobs = page.segment.blobItems.map((b: BlobItem) => ({
      name: b.name,
      size: b.properties.contentLength ?? 0,
      contentType: b.properties.contentType ?? '',
      lastModified: b.properties.lastModified.toISOString(),
    }));
    return { blobs, next: page.continuationToken || null };
  }

  async upload(container: string, blob: string, data: Buffer, contentType: string): Promise<void> {
    await this.service
      .getContainerClient(container)
      .getBlockBlobClient(blob)
      .uploadData(data, { blobHTTPHeaders: { blobContentType: contentType } });
  }

  async download(container: string, blob: string): Promise<BlobDownload> {
    const answer = await this.service.getContainerClient(container).getBlobClient(blob).download();
    return {
      contentType: answer.contentType ?? 'application/octet-stream',
      contentLength: answer.contentLength ?? 0,
      body: answer.readableStreamBody as Readable,
    };
  }

  async properties(container: string, blob: string): Promise<Record<string, unknown>> {
    const p = await this.service.getContainerClient(container).getBlobClient(blob).getProperties();
    return {
      contentType: p.contentType,
      contentLength: p.contentLength,
      contentMD5: p.contentMD5 ? Buffer.from(p.contentMD5).toString('base64') : null,
      etag: p.etag,
      lastModified: p.lastModified?.toISOString(),
      createdOn: p.createdOn?.toISOString(),
      blobType: p.blobType,
      accessTier: p.accessTier,
      leaseState: p.leaseState,
      metadata: p.metadata ?? {},
    };
  }

  async delete(container: string, blob: string): Promise<void> {
    await this.service.getContainerClient(container).getBlobClient(blob).delete();
  }
}

/**
 * A blob name the storage SDK can address. The SDK puts the name in a URL
 * path, where a `.` or `..` segment is resolved away (`../../victim` would
 * name the container `victim`), so such a name is refused, not sent.
 */
export function blobName(raw: unknown): string {
  if (typeof raw !== 'string' || !raw || raw.length > 1024) throw new InvalidInputError('a blob name has 1 to 1024 characters');
  if (raw.split('/').some((segment) => segment === '.' || segment === '..')) {
    throw new InvalidInputError(
      `the blob ${JSON.stringify(raw.slice(0, 200))} has a "." or ".." segment, which the storage SDK would resolve in its URL to another blob or container: it is listed, but the console does not touch it`,
    );
  }
  return raw;
}
