import type { FastifyReply, FastifyRequest } from 'fastify';
import { PassThrough, type Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { ServicePropertiesStore } from '../persistence/service-properties.ts';
import type { AccountStore } from '../persistence/store.ts';
import type { StorageAccount } from '../persistence/accounts.ts';
import { errors } from '../errors.ts';
import type { Action } from '../authentication/index.ts';
import { checkedBody } from './checksums.ts';

/** A sub-request of a Blob Batch: a request line and headers. */
export interface Subrequest {
  method: string;
  url: string;
  headers: Record<string, string>;
}

/** What a sub-request was answered. */
export interface SubrequestAnswer {
  status: number;
  statusText: string;
  headers: Record<string, string>;
  body: string;
}

/** One request, resolved to its account, container and blob, after authentication. */
export interface Operation {
  request: FastifyRequest;
  reply: FastifyReply;
  account: StorageAccount;
  store: AccountStore;
  container: string | undefined;
  blob: string | undefined;
  query: URLSearchParams;
  /** ServiceEndpoint of listings: `https://host/<account>` (path style) or `https://host/` (host style). */
  endpoint: string;
  /** Sent to the account's secondary endpoint (`<account>-secondary`): reads only, and Get Blob Service Stats. */
  secondary: boolean;
  limits: StorageLimits;
  /** Checks the caller's data role (Reader to read and list, Contributor for the rest) or SAS permissions. */
  authorize(action: Action): Promise<void>;
  /** Response headers a service SAS sets on the blob it reads (header name → value). */
  responseHeaderOverrides: Record<string, string>;
  /** Counts a blob written (Put Blob or Put Block List), for the component's metrics. */
  blobWritten(): void;
  /** Whether the caller's own credentials (Shared Key, a data role) may read a container's blobs: a copy source read from disk. */
  mayReadLocally(container: string): Promise<boolean>;
  /** The HTTP client a copy fetches its source with (trusts the local CA). */
  sourceDispatcher: Dispatcher;
  /** The service properties of the account (CORS rules, default version). */
  serviceProperties: ServicePropertiesStore;
  /** The version the request is served as (versions.ts). */
  serviceVersion: string;
  /** Runs a Blob Batch sub-request through this server's whole request handling, its own credentials included. */
  runSubrequest(request: Subrequest): Promise<SubrequestAnswer>;
  /** Who a bearer token names (the only callers that may get a user delegation key). */
  tokenIdentity?: { objectId: string; tenantId: string };
}

export interface StorageLimits {
  maxBlobBytes: number;
  maxBlockBytes: number;
}

export function header(op: Operation, name: string): string | undefined {
  const value = op.request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The request body's content (checksums.ts: a structured message unwrapped, CRC-64s
 * checked), piped rather than handed over: a write that fails (a full disk) stops
 * reading it without destroying the request, so the error can still be answered.
 */
export function body(op: Operation): Readable {
  return checkedBody(op, op.request.raw.pipe(new PassThrough()));
}

/** Reads a small request body (a block list) into a string, up to `limit` bytes. */
export async function smallBody(op: Operation, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of op.request.raw) {
    size += (chunk as Buffer).length;
    if (size > limit) throw errors.requestBodyTooLarge();
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const METADATA_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * `x-ms-meta-<name>` headers, names in the case they were sent (the service keeps it);
 * names must be valid C# identifiers, else `400 InvalidMetadata`, as the service requires.
 */
export function metadataFromHeaders(op: Operation): Record<string, string> {
  const metadata: Record<string, string> = {};
  const raw = op.request.raw.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    if (!name.toLowerCase().startsWith('x-ms-meta-')) continue;
    const key = name.slice('x-ms-meta-'.length);
    if (!METADATA_NAME.test(key)) throw errors.invalidMetadata(key);
    const existing = Object.keys(metadata).find((k) => k.toLowerCase() === key.toLowerCase());
    if (existing !== undefined) metadata[existing] += `,${raw[i + 1]!}`;
    else metadata[key] = raw[i + 1]!;
  }
  return metadata;
}

/** `maxresults` (1..5000, default 5000), `marker`, `prefix` of a listing. */
export function listingQuery(op: Operation) {
  const raw = op.query.get('maxresults');
  const maxResults = raw === null ? 5000 : Number(raw);
  if (!/^\d+$/.test(raw ?? '5000') || maxResults < 1 || maxResults > 5000) throw errors.invalidQuery('maxresults');
  const include = (op.query.get('include') ?? '').toLowerCase().split(',').filter(Boolean);
  return {
    maxResults,
    marker: op.query.get('marker') ?? '',
    prefix: op.query.get('prefix') ?? '',
    includeMetadata: include.includes('metadata'),
    includeSnapshots: include.includes('snapshots'),
    includeTags: include.includes('tags'),
    includeCopy: include.includes('copy'),
  };
}

/** One page of a sorted listing: items from `marker` (inclusive), and the marker of the next page. */
export function page<T>(items: T[], key: (item: T) => string, marker: string, max: number): { items: T[]; nextMarker: string } {
  const start = marker ? items.findIndex((item) => key(item) >= marker) : 0;
  const from = start < 0 ? items.length : start;
  const slice = items.slice(from, from + max);
  const next = items[from + max];
  return { items: slice, nextMarker: next ? key(next) : '' };
}
