/**
 * The worker thread of DurableWriter: writes files atomically (temporary file,
 * fsync, rename) on an event loop of its own, which no device traffic keeps
 * busy, and answers once the new content is on disk.
 */
import { stat } from 'node:fs/promises';
import { parentPort } from 'node:worker_threads';
import { writeFileAtomic } from '../../common/files.ts';

export interface DurableWrite {
  id: number;
  path: string;
  data: string;
  mode: number;
  /** Write only while the file is still this version (null: absent); undefined writes regardless. */
  expected?: string | null;
}

export type DurableWriteAnswer = { id: number; version: string } | { id: number; stale: true } | { id: number; error: string };

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

async function perform(request: DurableWrite): Promise<DurableWriteAnswer> {
  if (request.expected !== undefined && (await fileVersion(request.path)) !== request.expected) return { id: request.id, stale: true };
  await writeFileAtomic(request.path, request.data, request.mode);
  return { id: request.id, version: (await fileVersion(request.path))! };
}

parentPort?.on('message', (request: DurableWrite) => {
  void perform(request).then(
    (answer) => parentPort?.postMessage(answer),
    (err: unknown) => parentPort?.postMessage({ id: request.id, error: (err as Error).message } satisfies DurableWriteAnswer),
  );
});
