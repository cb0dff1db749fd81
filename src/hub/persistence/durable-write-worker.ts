/**
 * The worker thread of DurableWriter: writes files atomically (temporary file,
 * fsync, rename; a conditional write under the file's lock) on an event loop of its own, which no device traffic keeps
 * busy, and answers once the new content is on disk.
 */
import { stat } from 'node:fs/promises';
import { parentPort } from 'node:worker_threads';
import { LockLostError, withFileLock, withLockSnapshot, writeFileAtomic, type LockSnapshot } from '../../common/files.ts';

export interface DurableWrite {
  id: number;
  path: string;
  data: string;
  mode: number;
  /** Write only while the file is still this version (null: absent); undefined writes regardless. */
  expected?: string | null;
  /** The lock the sender holds over this write (see withLockSnapshot): no rename once it may be lost. */
  lock?: LockSnapshot;
}

export type DurableWriteAnswer =
  | { id: number; version: string }
  | { id: number; stale: true }
  | { id: number; lockLost: { path: string; why: string } }
  | { id: number; error: string; code?: string };

/** A file's version: what changes with every atomic write (a new inode, a new change time). */
export async function fileVersion(path: string): Promise<string | null> {
  try {
    const s = await stat(path, { bigint: true });
    return `${s.ino}:${s.ctimeNs}:${s.size}`;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

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
    if (request.expected !== undefined && (await fileVersion(request.path)) !== request.expected) return { id: request.id, stale: true };
    await writeFileAtomic(request.path, request.data, request.mode);
    return { id: request.id, version: (await fileVersion(request.path))! };
  };
  const checked = request.expected === undefined ? write : () => withFileLock(request.path, write);
  return request.lock ? withLockSnapshot(request.lock, checked) : checked();
}

parentPort?.on('message', (request: DurableWrite) => {
  void perform(request).then(
    (answer) => parentPort?.postMessage(answer),
    (err: unknown) =>
      parentPort?.postMessage(
        (err instanceof LockLostError
          ? { id: request.id, lockLost: { path: err.path, why: err.why } }
          : { id: request.id, error: (err as Error).message, code: (err as NodeJS.ErrnoException).code }) satisfies DurableWriteAnswer,
      ),
  );
});
