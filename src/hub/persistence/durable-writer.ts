/**
 * Atomic, fsynced file writes done by a worker thread. On the main thread a
 * write is about ten file-system calls, and each waits for a turn of an event
 * loop that a few hundred devices' telemetry keeps busy: under load that
 * waiting, not the disk, was most of a reported PATCH's round trip. Handed to
 * a worker, a write costs the main loop one message and one answer, and it is
 * still on disk before the caller is told so.
 */
import { stat } from 'node:fs/promises';
import { heldLockSnapshot, LockLostError } from '../../common/files.ts';
import { WorkerPool } from '../../common/worker-pool.ts';
import type { DurableWrite, DurableWriteAnswer } from './durable-write-worker.ts';

/** The file changed since it was read (another process wrote it): read it again. */
export class StaleFile extends Error {}

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

export class DurableWriter {
  /**
   * One thread, started with the first write; writes of different files go on side by side
   * (one file's writes come one at a time from the store's queue). A worker that died fails
   * its writes (nothing was acknowledged) and the next write starts another.
   */
  private readonly worker = WorkerPool.whenNeeded<DurableWrite, DurableWriteAnswer>({
    name: 'hub durable writes',
    module: new URL('./durable-write-worker.ts', import.meta.url),
    size: 1,
    tasksPerWorker: Infinity,
  });

  /** Writes `data`; resolves with the file's new version once it is on disk. */
  async write(path: string, data: string, mode: number, expected?: string | null): Promise<string> {
    // A write made under a file lock goes with that lock's state, which the worker checks just before it renames.
    const lock = heldLockSnapshot();
    const answer = await this.worker.run({ path, data, mode, ...(expected === undefined ? {} : { expected }), ...(lock ? { lock } : {}) });
    if ('version' in answer) return answer.version;
    if ('stale' in answer) throw new StaleFile();
    if ('lockLost' in answer) throw new LockLostError(answer.lockLost.path, answer.lockLost.why);
    // The errno code (ENOSPC: a full disk) goes with the message, so callers can tell it.
    throw Object.assign(new Error(answer.error), { code: answer.code });
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}
