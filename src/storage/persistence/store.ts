/**
 * Containers and blobs on disk, under <data-dir>/storage/<account>/<container>/:
 *   container.json   the container's properties and metadata
 *   blobs.json, blobs.log  the blob index: name → properties and the data file holding
 *                    its bytes (see blob-index.ts: a compacted index and a log of changes)
 *   data/<id>        blob contents, named by random id (blob names never reach the filesystem)
 *   blocks/<h>/<b>   uncommitted blocks of a blob (h = hash of the blob name, b = hex block id)
 * A page blob's data file is sparse, as long as the blob; Put Page writes into it in place
 * (see changePages).
 * A blob's bytes are written to a temporary file, flushed and renamed before the index
 * change that points at them is flushed, and the file a blob no longer uses is removed only
 * once the index change that drops it is durable: after a crash a blob is either its last
 * acknowledged version or a newer one, never a partial or missing one. Leftovers of
 * interrupted writes (unreferenced data, temporary files) are removed at start. State is
 * held in memory and loaded at start.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { copyFile, mkdir, open, readdir, readFile, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable, Transform } from 'node:stream';
import { syncDirectory, writeFileAtomic } from '../../common/files.ts';
import { KeyedSerialQueue } from '../../common/serial-queue.ts';
import { errors } from '../errors.ts';
import { DEFAULT_COMPACT_INDEX_AFTER } from '../options.ts';
import { BlobIndex } from './blob-index.ts';
import { PAGE_SIZE, withRange, type PageRange } from './page-ranges.ts';

export interface ContainerRecord {
  name: string;
  created: number;
  modified: number;
  etag: string;
  metadata: Record<string, string>;
  lease?: LeaseRecord;
  /** Anonymous read access (Set Container ACL's x-ms-blob-public-access). */
  publicAccess?: 'blob' | 'container';
  /** Stored access policies (Set Container ACL), by id. */
  accessPolicies?: SignedIdentifier[];
}

/** A lease on a blob or container (see handlers/leases.ts for its states). */
export interface LeaseRecord {
  id: string;
  /** Seconds, or -1 for an infinite lease. */
  duration: number;
  /** When a fixed lease runs out (ms). */
  expires?: number;
  /** When a lease being broken is broken (ms). */
  breaks?: number;
}

/** A stored access policy: what a SAS naming it (`si`) may do, and when. */
export interface SignedIdentifier {
  id: string;
  start?: string;
  expiry?: string;
  permission?: string;
}

export interface BlockRef {
  id: string;
  size: number;
}

export interface BlobProperties {
  contentType: string;
  contentEncoding?: string;
  contentLanguage?: string;
  contentDisposition?: string;
  cacheControl?: string;
}

/** What a write sets besides the bytes, and the condition it lands on. */
export interface WriteOptions {
  properties: BlobProperties;
  metadata: Record<string, string>;
  /** Largest body, bytes. */
  limit: number;
  /** Throws when the write must not replace this blob (If-Match, If-None-Match); checked as the write commits. */
  precondition?: (existing: BlobRecord | undefined) => void;
  /** What the write sets besides bytes, properties and metadata (blob type, tier, tags, copy state, a given MD5). */
  extra?: Partial<
    Pick<BlobVersion, 'blobType' | 'tier' | 'tierChanged' | 'tags' | 'copy' | 'md5' | 'pages' | 'sequenceNumber' | 'appendCount' | 'incrementalCopy'>
  >;
  /** The last touch to the new record, in the same index change (Incremental Copy Blob's snapshot of its result). */
  finish?: (record: BlobRecord, now: number) => BlobRecord;
}

/** A blob's state at one moment: its bytes (a data file) and what describes them. */
export interface BlobVersion extends BlobProperties {
  file: string;
  size: number;
  /** Base64 MD5 of the content ('' when unknown). */
  md5: string;
  created: number;
  modified: number;
  etag: string;
  metadata: Record<string, string>;
  /** The committed block list, when the blob was made from blocks. */
  blocks?: BlockRef[];
  /** Absent: BlockBlob (records written before other types existed). */
  blobType?: BlobType;
  /** Set Blob Tier's tier (absent: inferred Hot), and when it was set. */
  tier?: AccessTier;
  tierChanged?: number;
  tags?: Record<string, string>;
  copy?: CopyRecord;
  /** Append blobs: blocks appended so far, and whether Append Blob Seal closed it. */
  appendCount?: number;
  sealed?: boolean;
  /** Page blobs: the pages written (page-ranges.ts), and the sequence number. */
  pages?: PageRange[];
  sequenceNumber?: number;
  /** A blob made by Incremental Copy Blob: the source snapshot it holds, and the snapshot of itself taken then. */
  incrementalCopy?: IncrementalCopyRecord;
}

export interface IncrementalCopyRecord {
  /** The source blob's URL without its query: every later incremental copy must name the same blob. */
  sourceBlob: string;
  /** The source snapshot last copied (a later copy must name a later one). */
  sourceSnapshot: string;
  /** The snapshot of this blob taken when that copy completed (x-ms-copy-destination-snapshot). */
  destinationSnapshot: string;
}

/** Where a new page blob's pages come from: a data file's written ranges, or a stream of the whole blob (its non-zero pages are kept). */
export type PageSource = { path: string; pages: PageRange[] } | Readable;

/** What Put Page does to a page blob's bytes: write a body, clear pages, or (Set Blob Properties) resize. */
export type PageEdit = { write: 'update'; start: number; bytes: Buffer } | { write: 'clear'; start: number; end: number } | { write: 'resize'; size: number };

/** Zeros a clear writes, a buffer at a time. */
const ZEROS = Buffer.alloc(256 * PAGE_SIZE);
/** How much of a page blob a copy moves at once. */
const COPY_CHUNK = 1024 * 1024;

export type BlobType = 'BlockBlob' | 'AppendBlob' | 'PageBlob';
export type AccessTier = 'Hot' | 'Cool' | 'Cold' | 'Archive';

/** The result of the Copy Blob that made this blob. */
export interface CopyRecord {
  id: string;
  source: string;
  status: 'success' | 'aborted' | 'failed' | 'pending';
  progress: string;
  completed: number;
}

/** A snapshot: the blob as it was at `snapshot` (the service's 7-digit ISO time). */
export interface SnapshotRecord extends BlobVersion {
  snapshot: string;
}

export interface BlobRecord extends BlobVersion {
  name: string;
  lease?: LeaseRecord;
  /** Snapshots, oldest first. */
  snapshots?: SnapshotRecord[];
}

/** The data files a blob's record and its snapshots hold. */
export function dataFilesOf(blob: BlobRecord | undefined): string[] {
  return blob ? [blob.file, ...(blob.snapshots ?? []).map((s) => s.file)] : [];
}

/** Files `before` held that `after` does not: removable once the change is durable. */
function droppedFiles(before: BlobRecord | undefined, after: BlobRecord | undefined): string[] {
  const kept = new Set(dataFilesOf(after));
  return [...new Set(dataFilesOf(before))].filter((file) => !kept.has(file));
}

interface ContainerState {
  record: ContainerRecord;
  dir: string;
  index: BlobIndex;
  /**
   * Serialises this container's writes from their precondition check to their index change
   * (so a write's If-Match sees the blob it replaces), and its deletion after them.
   */
  queue: Promise<unknown>;
}

function hash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 32);
}

/** Counts bytes and computes MD5 while a body streams to disk, stopping past a limit. */
function measuring(limit: number) {
  const md5 = createHash('md5');
  let size = 0;
  const transform = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length;
      if (size > limit) return callback(errors.requestBodyTooLarge());
      md5.update(chunk);
      callback(null, chunk);
    },
  });
  return { transform, result: () => ({ size, md5: md5.digest('base64') }) };
}

async function entries(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/**
 * Removes what interrupted writes left in a container's folder: temporary files of the
 * index and of uncommitted blocks, and data files no blob points at (never acknowledged,
 * or made obsolete by an index that became durable).
 */
async function removeLeftovers(dir: string, blobs: ReadonlyMap<string, BlobRecord>): Promise<void> {
  const referenced = new Set([...blobs.values()].flatMap(dataFilesOf));
  const remove = (path: string) => rm(path, { force: true });
  const temporary = (name: string) => name.endsWith('.tmp');
  await Promise.all((await entries(dir)).filter(temporary).map((f) => remove(join(dir, f))));
  await Promise.all((await entries(join(dir, 'data'))).filter((f) => !referenced.has(f)).map((f) => remove(join(dir, 'data', f))));
  for (const blob of await entries(join(dir, 'blocks'))) {
    const blockDir = join(dir, 'blocks', blob);
    await Promise.all((await entries(blockDir)).filter(temporary).map((f) => remove(join(blockDir, f))));
  }
}

/** Copies the written ranges of a page blob's data file into `into` at the same places; the ranges. */
async function copyPages(into: FileHandle, source: { path: string; pages: PageRange[] }): Promise<PageRange[]> {
  const from = await open(source.path, 'r');
  try {
    const buffer = Buffer.alloc(COPY_CHUNK);
    for (const [start, end] of source.pages) {
      for (let at = start; at <= end; at += COPY_CHUNK) {
        const { bytesRead } = await from.read(buffer, 0, Math.min(COPY_CHUNK, end - at + 1), at);
        await into.write(buffer, 0, bytesRead, at);
      }
    }
    return source.pages;
  } finally {
    await from.close();
  }
}

/**
 * Writes a whole page blob's bytes from a copy's source stream into `into`, skipping pages of zeros (they
 * stay holes, as unwritten pages are); the ranges written. Throws unless exactly `size` bytes come.
 */
async function writeNonZeroPages(into: FileHandle, size: number, source: Readable): Promise<PageRange[]> {
  let pages: PageRange[] = [];
  let at = 0;
  let pending: Buffer = Buffer.alloc(0);
  const flush = async (bytes: Buffer) => {
    // Runs of non-zero pages, each written at once.
    for (let page = 0; page < bytes.length;) {
      if (isZero(bytes.subarray(page, page + PAGE_SIZE))) {
        page += PAGE_SIZE;
        continue;
      }
      let end = page + PAGE_SIZE;
      while (end < bytes.length && !isZero(bytes.subarray(end, end + PAGE_SIZE))) end += PAGE_SIZE;
      await into.write(bytes, page, end - page, at + page);
      pages = withRange(pages, at + page, at + end - 1);
      page = end;
    }
    at += bytes.length;
  };
  for await (const chunk of source) {
    pending = pending.length ? Buffer.concat([pending, chunk as Buffer]) : (chunk as Buffer);
    if (at + pending.length > size) throw sizeMismatch();
    const whole = pending.length - (pending.length % PAGE_SIZE);
    await flush(pending.subarray(0, whole));
    pending = pending.subarray(whole);
  }
  if (pending.length || at !== size) throw sizeMismatch();
  return pages;
}

const sizeMismatch = () => errors.cannotVerifyCopySource(400, 'The source sent a length other than its size.');

function isZero(bytes: Buffer): boolean {
  return bytes.equals(ZEROS.subarray(0, bytes.length));
}

export class AccountStore {
  private readonly containers = new Map<string, ContainerState>();
  /**
   * Creations and deletions of one container name, one after another in the order they
   * arrived, so that a deletion never removes the folder of a creation after it.
   */
  private readonly nameTurns = new KeyedSerialQueue();
  private etagCounter = 0;

  /**
   * `compactAfter`: the fewest index changes a container's log holds before it is folded in
   * (see blob-index.ts); `now`: the clock of leases, snapshots and modification times.
   */
  private constructor(
    readonly root: string,
    private readonly compactAfter: number,
    readonly now: () => number,
  ) {}

  /** Loads an account's containers and blob indexes, and removes leftovers of interrupted writes. */
  static async open(root: string, options: { compactIndexAfter?: number; clock?: () => number } = {}): Promise<AccountStore> {
    const store = new AccountStore(root, options.compactIndexAfter ?? DEFAULT_COMPACT_INDEX_AFTER, options.clock ?? Date.now);
    await mkdir(root, { recursive: true });
    for (const entry of await readdir(root, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const dir = join(root, entry.name);
      let record: ContainerRecord;
      try {
        record = JSON.parse(await readFile(join(dir, 'container.json'), 'utf8')) as ContainerRecord;
      } catch {
        // A container whose creation never completed: nothing was acknowledged.
        await rm(dir, { recursive: true, force: true });
        continue;
      }
      const index = await BlobIndex.load(dir, store.compactAfter);
      store.containers.set(record.name, { record, dir, index, queue: Promise.resolve() });
      await removeLeftovers(dir, index.blobs);
    }
    return store;
  }

  /** Etags in the service's style: 0x + a hex number that grows with each change of this account. */
  newEtag(): string {
    this.etagCounter = (this.etagCounter + 1) % 4096;
    return `"0x${(this.now() * 4096 + this.etagCounter).toString(16).toUpperCase()}"`;
  }

  listContainers(): ContainerRecord[] {
    return [...this.containers.values()].map((c) => c.record).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  findContainer(name: string): ContainerRecord | undefined {
    return this.containers.get(name)?.record;
  }

  getContainer(name: string): ContainerRecord {
    return this.state(name).record;
  }

  private state(name: string): ContainerState {
    const state = this.containers.get(name);
    if (!state) throw errors.containerNotFound();
    return state;
  }

  /** Creates a container; it is listed once its folder and container.json are on disk. */
  createContainer(name: string, metadata: Record<string, string>): Promise<ContainerRecord> {
    return this.nameTurns.run(name, async () => {
      if (this.containers.has(name)) throw errors.containerExists();
      const now = Date.now();
      const record: ContainerRecord = { name, created: now, modified: now, etag: this.newEtag(), metadata };
      const dir = join(this.root, name);
      try {
        // What a deletion cut short left of an earlier container of this name (it has no container.json).
        await rm(dir, { recursive: true, force: true });
        await mkdir(join(dir, 'data'), { recursive: true });
        await writeFileAtomic(join(dir, 'container.json'), JSON.stringify(record));
        await syncDirectory(dir);
        await syncDirectory(this.root);
      } catch (err) {
        await rm(dir, { recursive: true, force: true }).catch(() => undefined);
        throw err;
      }
      this.containers.set(name, { record, dir, index: BlobIndex.create(dir, this.compactAfter), queue: Promise.resolve() });
      return record;
    });
  }

  /**
   * Deletes a container after the index changes already queued (which then find no
   * container). Removing container.json is the step that deletes it: a folder without one
   * is discarded at start, so the container leaves memory only once that removal is done.
   */
  deleteContainer(name: string): Promise<void> {
    return this.nameTurns.run(name, async () => {
      const state = this.state(name);
      const run = state.queue.then(async () => {
        await rm(join(state.dir, 'container.json'), { force: true });
        this.containers.delete(name);
        await rm(state.dir, { recursive: true, force: true });
      });
      state.queue = run.catch(() => undefined);
      await run;
    });
  }

  listBlobs(container: string): BlobRecord[] {
    return [...this.state(container).index.blobs.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  findBlob(container: string, name: string): BlobRecord | undefined {
    return this.state(container).index.blobs.get(name);
  }

  getBlob(container: string, name: string): BlobRecord {
    const blob = this.findBlob(container, name);
    if (!blob) throw errors.blobNotFound();
    return blob;
  }

  dataPath(container: string, blob: BlobVersion): string {
    return join(this.state(container).dir, 'data', blob.file);
  }

  /**
   * Runs an index change of one container after the previous one finished and, once the
   * change is durable, removes the data file it made obsolete: until then the index on
   * disk may still point at it. A compaction the change makes due runs after it is
   * acknowledged, before the next change.
   */
  private async changeIndex<T>(state: ContainerState, change: () => Promise<{ value: T; dropped?: string[] }>): Promise<T> {
    const run = state.queue.then(async () => {
      if (this.containers.get(state.record.name) !== state) throw errors.containerNotFound();
      const { value, dropped = [] } = await change();
      await Promise.all(dropped.map((file) => rm(join(state.dir, 'data', file), { force: true })));
      return value;
    });
    // A compaction that fails leaves the log longer; the next change tries again.
    state.queue = run
      .catch(() => undefined)
      .then(() => (this.containers.get(state.record.name) === state ? state.index.compactIfDue() : undefined))
      .catch(() => undefined);
    return run;
  }

  /**
   * Streams a body into `path` through a temporary file, flushed, renamed and its folder
   * synced; `verify` (an MD5 check) may refuse the bytes before they take the name.
   */
  private async writeDurably(source: Readable, path: string, measure: ReturnType<typeof measuring>, verify?: () => void): Promise<void> {
    const temp = `${path}.${randomUUID()}.tmp`;
    const out = createWriteStream(temp, { flags: 'wx' });
    try {
      await pipeline(source, measure.transform, out);
      const handle = await open(temp, 'r');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      verify?.();
      await rename(temp, path);
      await syncDirectory(dirname(path));
    } catch (err) {
      out.destroy();
      await rm(temp, { force: true });
      throw err;
    }
  }

  /** Streams a body into a new data file; returns its id, size and MD5 once it is on disk. */
  private async writeData(state: ContainerState, body: Readable | Readable[], limit: number) {
    const id = randomUUID();
    const measure = measuring(limit);
    // Blocks of a block list stream one after another into one file.
    const source = Array.isArray(body)
      ? Readable.from(
          (async function* () {
            for (const part of body) yield* part;
          })(),
        )
      : body;
    await this.writeDurably(source, join(state.dir, 'data', id), measure);
    return { id, ...measure.result() };
  }

  async putBlob(container: string, name: string, body: Readable, options: WriteOptions & { expectedMd5?: string }): Promise<BlobRecord> {
    const state = this.state(container);
    const data = await this.writeData(state, body, options.limit);
    if (options.expectedMd5 && options.expectedMd5 !== data.md5) {
      await rm(join(state.dir, 'data', data.id), { force: true });
      throw errors.md5Mismatch();
    }
    return this.commitData(state, name, data, options);
  }

  private async commitData(
    state: ContainerState,
    name: string,
    data: { id: string; size: number; md5: string },
    options: WriteOptions,
    blocks?: BlockRef[],
  ): Promise<BlobRecord> {
    try {
      return await this.changeIndex(state, async () => {
        const previous = state.index.blobs.get(name);
        options.precondition?.(previous);
        const now = this.now();
        const record: BlobRecord = {
          name,
          file: data.id,
          size: data.size,
          md5: data.md5,
          created: previous?.created ?? now,
          modified: now,
          etag: this.newEtag(),
          metadata: options.metadata,
          ...options.properties,
          ...(blocks ? { blocks } : {}),
          // A write keeps the blob's lease and snapshots.
          ...(previous?.lease ? { lease: previous.lease } : {}),
          ...(previous?.snapshots ? { snapshots: previous.snapshots } : {}),
          ...options.extra,
        };
        const finished = options.finish ? options.finish(record, now) : record;
        await state.index.put(finished);
        return { value: finished, dropped: droppedFiles(previous, finished) };
      });
    } catch (err) {
      // Bytes no blob points at are removed now rather than at the next start.
      if (state.index.blobs.get(name)?.file !== data.id) await rm(join(state.dir, 'data', data.id), { force: true });
      throw err;
    }
  }

  /**
   * Creates a page blob of `size` bytes: a sparse data file, flushed and named like any
   * other, all zero or (a copy) holding the pages of `source`; only written pages take space.
   */
  async createPageBlob(container: string, name: string, size: number, options: WriteOptions, source?: PageSource): Promise<BlobRecord> {
    const state = this.state(container);
    const id = randomUUID();
    const path = join(state.dir, 'data', id);
    const temp = `${path}.${randomUUID()}.tmp`;
    let pages: PageRange[] = [];
    try {
      const handle = await open(temp, 'wx');
      try {
        await handle.truncate(size);
        if (source) pages = source instanceof Readable ? await writeNonZeroPages(handle, size, source) : await copyPages(handle, source);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temp, path);
      await syncDirectory(dirname(path));
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
    return this.commitData(state, name, { id, size, md5: '' }, source ? { ...options, extra: { ...options.extra, pages } } : options);
  }

  /**
   * Changes a page blob's bytes (Put Page, clear, resize) and its record as one index
   * change: `change` sees the blob as it is then (it throws to refuse) and returns its new
   * record; the edit is applied to the data file and flushed before that record is. A data
   * file a snapshot shares is copied first and the copy edited, so snapshots keep their
   * bytes; otherwise the file is edited in place: a crash during an edit that was never
   * acknowledged can leave its pages part written (the other pages are untouched).
   */
  async changePages(container: string, name: string, edit: PageEdit, change: (blob: BlobRecord, now: number) => BlobRecord): Promise<BlobRecord> {
    const state = this.state(container);
    return this.changeIndex(state, async () => {
      const previous = state.index.blobs.get(name);
      if (!previous) throw errors.blobNotFound();
      const record = change(previous, this.now());
      const current = join(state.dir, 'data', previous.file);
      const shared = (previous.snapshots ?? []).some((s) => s.file === previous.file);
      const file = shared ? randomUUID() : previous.file;
      const path = join(state.dir, 'data', file);
      const temp = shared ? `${path}.${randomUUID()}.tmp` : path;
      try {
        if (shared) await copyFile(current, temp);
        const handle = await open(temp, 'r+');
        try {
          if (edit.write === 'update') await handle.write(edit.bytes, 0, edit.bytes.length, edit.start);
          if (edit.write === 'resize') await handle.truncate(edit.size);
          if (edit.write === 'clear') {
            for (let at = edit.start; at <= edit.end; at += ZEROS.length) await handle.write(ZEROS, 0, Math.min(ZEROS.length, edit.end - at + 1), at);
          }
          await handle.datasync();
        } finally {
          await handle.close();
        }
        if (shared) {
          await rename(temp, path);
          await syncDirectory(dirname(path));
        }
      } catch (err) {
        if (shared) await rm(temp, { force: true });
        throw err;
      }
      const next = { ...record, file };
      try {
        await state.index.put(next);
      } catch (err) {
        if (shared) await rm(path, { force: true });
        throw err;
      }
      return { value: next, dropped: droppedFiles(previous, next) };
    });
  }

  private blockDir(state: ContainerState, blob: string): string {
    return join(state.dir, 'blocks', hash(blob));
  }

  /** Stages a block; its MD5 is checked against `expectedMd5` before it counts. */
  async putBlock(
    container: string,
    blob: string,
    blockId: string,
    body: Readable,
    limit: number,
    expectedMd5?: string,
  ): Promise<{ size: number; md5: string }> {
    const state = this.state(container);
    const dir = this.blockDir(state, blob);
    await mkdir(dir, { recursive: true });
    const measure = measuring(limit);
    let result = { size: 0, md5: '' };
    await this.writeDurably(body, join(dir, Buffer.from(blockId, 'base64').toString('hex')), measure, () => {
      result = measure.result();
      if (expectedMd5 && expectedMd5 !== result.md5) throw errors.md5Mismatch();
    });
    return result;
  }

  /**
   * Append Block: the body is staged durably first, then, in the container's turn, `check`
   * sees the blob as it is (conditions, lease, seal, append position), the bytes are
   * written after its last byte and flushed, and the new length is recorded. Bytes a crash
   * leaves past the recorded length are never read and are overwritten by the next append;
   * a snapshot shares the file and reads only up to its own length.
   */
  async appendBlock(
    container: string,
    name: string,
    body: Readable,
    limit: number,
    check: (blob: BlobRecord, appending: { size: number; md5: string }) => void,
  ): Promise<{ blob: BlobRecord; offset: number; md5: string }> {
    const state = this.state(container);
    const staged = join(state.dir, `append-${randomUUID()}.tmp`);
    const measure = measuring(limit);
    await this.writeDurably(body, staged, measure);
    const appending = measure.result();
    try {
      return await this.changeIndex(state, async () => {
        const blob = state.index.blobs.get(name);
        if (!blob) throw errors.blobNotFound();
        check(blob, appending);
        const target = await open(join(state.dir, 'data', blob.file), 'r+');
        try {
          const bytes = await readFile(staged);
          await target.write(bytes, 0, bytes.length, blob.size);
          await target.datasync();
        } finally {
          await target.close();
        }
        const record: BlobRecord = {
          ...blob,
          size: blob.size + appending.size,
          md5: '',
          appendCount: (blob.appendCount ?? 0) + 1,
          etag: this.newEtag(),
          modified: this.now(),
        };
        await state.index.put(record);
        return { value: { blob: record, offset: blob.size, md5: appending.md5 } };
      });
    } finally {
      await rm(staged, { force: true });
    }
  }

  /** The staged (uncommitted) blocks of a blob, in the order they were staged. */
  async uncommittedBlocks(container: string, blob: string): Promise<BlockRef[]> {
    const dir = this.blockDir(this.state(container), blob);
    const blocks: (BlockRef & { staged: number })[] = [];
    for (const file of await entries(dir)) {
      if (!/^[0-9a-f]+$/.test(file)) continue;
      const info = await stat(join(dir, file)).catch(() => undefined);
      if (info) blocks.push({ id: Buffer.from(file, 'hex').toString('base64'), size: info.size, staged: info.mtimeMs });
    }
    return blocks.sort((a, b) => a.staged - b.staged).map(({ id, size }) => ({ id, size }));
  }

  /**
   * Commits a block list: each id is looked up among the uncommitted blocks
   * (Uncommitted/Latest) or the blob's committed blocks (Committed/Latest).
   */
  async commitBlockList(
    container: string,
    name: string,
    list: { id: string; from: 'Latest' | 'Committed' | 'Uncommitted' }[],
    options: WriteOptions,
  ): Promise<BlobRecord> {
    const state = this.state(container);
    const dir = this.blockDir(state, name);
    const existing = state.index.blobs.get(name);
    const committedOffsets = new Map<string, { start: number; size: number }>();
    let offset = 0;
    for (const block of existing?.blocks ?? []) {
      committedOffsets.set(block.id, { start: offset, size: block.size });
      offset += block.size;
    }
    const parts: Readable[] = [];
    const refs: BlockRef[] = [];
    for (const item of list) {
      const uncommitted = join(dir, Buffer.from(item.id, 'base64').toString('hex'));
      const uncommittedSize =
        item.from === 'Committed'
          ? undefined
          : await stat(uncommitted).then(
              (s) => s.size,
              () => undefined,
            );
      if (uncommittedSize !== undefined) {
        parts.push(createReadStream(uncommitted));
        refs.push({ id: item.id, size: uncommittedSize });
        continue;
      }
      const committed = item.from === 'Uncommitted' ? undefined : committedOffsets.get(item.id);
      if (!committed || !existing) throw errors.invalidBlockList();
      parts.push(
        committed.size === 0
          ? Readable.from([])
          : createReadStream(this.dataPath(container, existing), { start: committed.start, end: committed.start + committed.size - 1 }),
      );
      refs.push({ id: item.id, size: committed.size });
    }
    const data = await this.writeData(state, parts, options.limit);
    const record = await this.commitData(state, name, data, options, refs);
    await rm(dir, { recursive: true, force: true });
    return record;
  }

  /**
   * Changes a blob's record as one index change, after the writes queued before it:
   * `change` gets the blob as it is then (it throws to refuse, e.g. a condition not met)
   * and returns its new record, or undefined to delete the blob.
   */
  async updateBlob(container: string, name: string, change: (blob: BlobRecord, now: number) => BlobRecord | undefined): Promise<BlobRecord | undefined> {
    const state = this.state(container);
    const next = await this.changeIndex(state, async () => {
      const previous = state.index.blobs.get(name);
      if (!previous) throw errors.blobNotFound();
      const record = change(previous, this.now());
      if (record) await state.index.put(record);
      else await state.index.delete(name);
      return { value: record, dropped: droppedFiles(previous, record) };
    });
    if (!next) await rm(this.blockDir(state, name), { recursive: true, force: true });
    return next;
  }

  /** Changes a container's record (metadata, lease, access policy) after the writes queued before it. */
  async updateContainer(name: string, change: (container: ContainerRecord, now: number) => ContainerRecord): Promise<ContainerRecord> {
    const state = this.state(name);
    return this.changeIndex(state, async () => {
      const record = change(state.record, this.now());
      await writeFileAtomic(join(state.dir, 'container.json'), JSON.stringify(record));
      await syncDirectory(state.dir);
      state.record = record;
      return { value: record };
    });
  }
}
