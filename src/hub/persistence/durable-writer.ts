/**
 * Atomic, fsynced file writes done by a worker thread. On the main thread a
 * write is about ten file-system calls, and each waits for a turn of an event
 * loop that a few hundred devices' telemetry keeps busy: under load that
 * waiting, not the disk, was most of a reported PATCH's round trip. Handed to
 * a worker, a write costs the main loop one message and one answer, and it is
 * still on disk before the caller is told so.
 */
import type { Worker } from 'node:worker_threads';
import { heldLockSnapshot, LockLostError } from '../../common/files.ts';
import { startTypeScriptWorker } from '../../common/worker.ts';
import type { DurableWrite, DurableWriteAnswer } from './durable-write-worker.ts';

/** The file changed since it was read (another process wrote it): read it again. */
export class StaleFile extends Error {}

interface Pending {
  resolve(version: string): void;
  reject(err: Error): void;
}

export class DurableWriter {
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  /** Writes `data`; resolves with the file's new version once it is on disk. */
  write(path: string, data: string, mode: number, expected?: string | null): Promise<string> {
    const id = this.nextId++;
    return new Promise<string>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // A write made under a file lock goes with that lock's state, which the worker checks just before it renames.
      const lock = heldLockSnapshot();
      this.started().postMessage({ id, path, data, mode, ...(expected === undefined ? {} : { expected }), ...(lock ? { lock } : {}) } satisfies DurableWrite);
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
    this.failAll(new Error('the store is closed'));
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = startTypeScriptWorker(new URL('./durable-write-worker.ts', import.meta.url));
    // Pending writes are awaited by their callers; an idle writer must not keep the process alive.
    worker.unref();
    worker.on('message', (answer: DurableWriteAnswer) => {
      const pending = this.pending.get(answer.id);
      this.pending.delete(answer.id);
      if (!pending) return;
      if ('version' in answer) pending.resolve(answer.version);
      // The errno code (ENOSPC: a full disk) goes with the message, so callers can tell it.
      else
        pending.reject(
          'stale' in answer
            ? new StaleFile()
            : 'lockLost' in answer
              ? new LockLostError(answer.lockLost.path, answer.lockLost.why)
              : Object.assign(new Error(answer.error), { code: answer.code }),
        );
    });
    // A worker that died takes its writes with it: they fail (nothing was acknowledged), the next write starts a new one.
    worker.on('error', (err) => {
      if (this.worker === worker) this.worker = undefined;
      this.failAll(err);
    });
    this.worker = worker;
    return worker;
  }

  private failAll(err: Error): void {
    for (const pending of this.pending.values()) pending.reject(err);
    this.pending.clear();
  }
}
