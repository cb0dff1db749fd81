/**
 * The worker thread of DurableWriter: writes files atomically (temporary file,
 * fsync, rename; a conditional write under the file's lock) on an event loop of its own, which no device traffic keeps
 * busy, and answers once the new content is on disk.
 */
import { LockLostError, withFileLock, withLockSnapshot, writeFileAtomic, type LockSnapshot } from '../../common/files.ts';
import { serveTasks } from '../../common/worker-pool.ts';
import { fileVersion } from './durable-writer.ts';

export interface DurableWrite {
  path: string;
  data: string;
  mode: number;
  /** Write only while the file is still this version (null: absent); undefined writes regardless. */
  expected?: string | null;
  /** The lock the sender holds over this write (see withLockSnapshot): no rename once it may be lost. */
  lock?: LockSnapshot;
}

export type DurableWriteAnswer = { version: string } | { stale: true } | { lockLost: { path: string; why: string } } | { error: string; code?: string };

/**
 * A conditional write compares and renames holding the file's lock, which every
 * process writing hub files takes for it (`offcloud hub device …` runs this
 * worker too, and deletes under the lock): no other write lands between the
 * check and the rename, so none is overwritten unseen. The lock is one mkdir
 * and one rmdir on this thread; unconditional writes take none: C2D queues and
 * policies, which only the hub writes, and a device file whose caller already
 * holds its lock (FileStore.updateIdentity's fallback — taking it here again
 * would wait on this very process until the lock went stale). That caller's
 * lock comes as a snapshot, checked before the rename as the lock itself is on
 * the caller's thread.
 */
async function perform(request: DurableWrite): Promise<DurableWriteAnswer> {
  const write = async (): Promise<DurableWriteAnswer> => {
    if (request.expected !== undefined && (await fileVersion(request.path)) !== request.expected) return { stale: true };
    await writeFileAtomic(request.path, request.data, request.mode);
    return { version: (await fileVersion(request.path))! };
  };
  const checked = request.expected === undefined ? write : () => withFileLock(request.path, write);
  return request.lock ? withLockSnapshot(request.lock, checked) : checked();
}

/** Every failure is an answer the writer tells apart: a lost lock, or the file system's error with its code (ENOSPC). */
async function answer(request: DurableWrite): Promise<DurableWriteAnswer> {
  try {
    return await perform(request);
  } catch (err) {
    if (err instanceof LockLostError) return { lockLost: { path: err.path, why: err.why } };
    return { error: (err as Error).message, code: (err as NodeJS.ErrnoException).code };
  }
}

await serveTasks<DurableWrite, DurableWriteAnswer>(async () => answer);
