import { AsyncLocalStorage } from 'node:async_hooks';
import * as fs from 'node:fs';
import { link, mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { lock } from 'proper-lockfile';
import { OffcloudError } from './errors.ts';

/** Whether a file operation failed because the disk (or the user's disk quota) is full. */
export function isDiskFull(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}

/**
 * Writes `bytes` at `offset` of the file at `path` (made if missing) and flushes them, whole
 * or not at all: the loop goes on after a short write, and when the disk refuses the rest
 * (ENOSPC) the file is cut back to `offset` and the error thrown. For append-only logs that
 * keep their own length: nothing is acknowledged that is not whole on disk, and the next
 * line goes where the refused one would have.
 */
export async function writeWholeAt(path: string, offset: number, bytes: Uint8Array, mode = 0o644): Promise<void> {
  const handle = await open(path, fs.constants.O_WRONLY | fs.constants.O_CREAT, mode);
  try {
    for (let written = 0; written < bytes.length;) {
      const { bytesWritten } = await handle.write(bytes, written, bytes.length - written, offset + written);
      if (bytesWritten === 0) throw new Error(`${path}: the file system took no byte of a write`);
      written += bytesWritten;
    }
    await handle.datasync();
  } catch (err) {
    await handle.truncate(offset).catch(() => undefined);
    throw err;
  } finally {
    await handle.close();
  }
}

/** A text file's content, or undefined when there is no such file. */
export async function readTextIfPresent(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Writes a file so that a crash at any moment leaves either the old or the new
 * content: write a temporary file beside it, flush it, then rename over.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o644): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeFlushed(temp, data, mode);
    assertLockHeld();
    await rename(temp, path);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}

/** Writes a new file and flushes it to disk. */
async function writeFlushed(path: string, data: string | Uint8Array, mode: number): Promise<void> {
  const handle = await open(path, 'w', mode);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Removes the temporary files writeFileAtomic (`*.tmp`) and createFileExclusive
 * (`*.new`) leave beside `path` when the process dies mid-write; the file's
 * owner calls it at start, before anyone writes it.
 */
export function removeStaleTemporaries(path: string): Promise<void> {
  return removeTemporaries(dirname(path), `${basename(path)}.`);
}

/**
 * Removes every temporary file writeFileAtomic and createFileExclusive left in `dir` (a
 * folder of many files one owner writes), likewise; with `locks`, also the lock folders
 * withFileLock left there — only for an owner that no command writes beside at its start.
 */
export function removeStaleTemporariesIn(dir: string, { locks = false } = {}): Promise<void> {
  return removeTemporaries(dir, '', locks ? ['.tmp', '.new', '.lock'] : ['.tmp', '.new']);
}

async function removeTemporaries(dir: string, prefix: string, suffixes: readonly string[] = ['.tmp', '.new']): Promise<void> {
  const names = await readdir(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    throw err;
  });
  const temporary = (name: string) => name.startsWith(prefix) && suffixes.some((suffix) => name.endsWith(suffix));
  await Promise.all(names.filter(temporary).map((name) => rm(join(dir, name), { recursive: true, force: true })));
}

/**
 * Flushes a folder's entries (a rename or a new file in it) to disk. Needed where the
 * order of two renames must survive a power loss, not only a killed process.
 */
export async function syncDirectory(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Writes `content` to `path` unless the file exists: written beside it and
 * flushed, then hard-linked into place, which fails when another process got
 * there first. Returns false when the file already existed.
 */
export async function createFileExclusive(path: string, content: string, mode: number): Promise<boolean> {
  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.${randomBytes(6).toString('hex')}.new`;
  try {
    await writeFlushed(temp, content, mode);
    assertLockHeld();
    await link(temp, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    await rm(temp, { force: true });
  }
}

/** How long a lock whose holder stopped refreshing it (a command killed mid-edit) keeps others out. */
const LOCK_STALE_MS = 10_000;
/** A lock this close to stale counts as lost: another process may be taking it over. */
const LOCK_MARGIN_MS = 2_000;

/** The lock an edit holds, seen by the writes made under it. */
interface HeldLock {
  path: string;
  /** Wall-clock time its mtime was last set by this process: others take it over once that is LOCK_STALE_MS old. */
  freshAt: number;
  /** Set when proper-lockfile finds the lock changed or gone (ECOMPROMISED). */
  lost?: Error;
}

const heldLocks = new AsyncLocalStorage<HeldLock>();

/** A write under a file lock that this process no longer surely holds: nothing was written (told in one line). */
export class LockLostError extends OffcloudError {
  constructor(
    readonly path: string,
    readonly why: string,
  ) {
    super('LockLost', `the lock on ${path} was lost (${why}), so nothing was written; run the command again`);
  }
}

/**
 * Throws LockLostError when called under withFileLock whose lock is lost or
 * close to stale (the process was stopped or starved, and another may have
 * taken the lock over and written). writeFileAtomic and createFileExclusive
 * call it just before their rename or link, so no edit lands under a lost lock.
 */
function assertLockHeld(): void {
  const held = heldLocks.getStore();
  if (!held) return;
  if (held.lost) throw new LockLostError(held.path, held.lost.message);
  const age = Date.now() - held.freshAt;
  if (age > LOCK_STALE_MS - LOCK_MARGIN_MS) throw new LockLostError(held.path, `not refreshed for ${age} ms`);
}

/**
 * Removes the file at `path` (gone already is fine): the delete beside writeFileAtomic,
 * refused likewise under a lock that is lost or close to stale, so a delete made under
 * withFileLock cannot take away a file another process wrote after taking the lock over.
 */
export async function removeFile(path: string): Promise<void> {
  assertLockHeld();
  await rm(path, { force: true });
}

/** The caller's lock as another thread sees it: a snapshot, so its age only grows there. */
export interface LockSnapshot {
  path: string;
  freshAt: number;
  lost?: string;
}

/** The lock held by the running edit (see withFileLock), for a write handed to a worker thread; undefined outside one. */
export function heldLockSnapshot(): LockSnapshot | undefined {
  const held = heldLocks.getStore();
  return held && { path: held.path, freshAt: held.freshAt, ...(held.lost ? { lost: held.lost.message } : {}) };
}

/**
 * Runs, in a worker thread, a write that the sending thread makes under its lock: writeFileAtomic and
 * removeFile in it check the snapshot as they would the lock itself, and, since the snapshot is not
 * refreshed, refuse once it is as old as a lock close to stale — never later than the sender would.
 */
export function withLockSnapshot<T>(snapshot: LockSnapshot, write: () => Promise<T>): Promise<T> {
  const held: HeldLock = { path: snapshot.path, freshAt: snapshot.freshAt, ...(snapshot.lost ? { lost: new Error(snapshot.lost) } : {}) };
  return heldLocks.run(held, write);
}

/**
 * Runs a read-modify-write of `path` holding its lock, `<path>.lock` (a folder
 * proper-lockfile makes atomically and refreshes while held), so that commands
 * editing one file at once each see the others' edits: without it two read the
 * same version and the second write drops the first's edit. Others wait for it
 * up to about twice the stale time, so a lock a killed command left is taken over.
 * A lock lost during the edit (see assertLockHeld) fails the edit with
 * LockLostError; it never ends the process.
 */
export async function withFileLock<T>(path: string, edit: () => Promise<T>): Promise<T> {
  await mkdir(dirname(path), { recursive: true });
  const held: HeldLock = { path, freshAt: Date.now() };
  const release = await lock(path, {
    realpath: false,
    stale: LOCK_STALE_MS,
    retries: { retries: 200, factor: 1.3, minTimeout: 5, maxTimeout: 100, randomize: true },
    // Each refresh of the lock's mtime is a moment it was surely ours.
    fs: {
      ...fs,
      utimes: (file: fs.PathLike, atime: Date, mtime: Date, done: fs.NoParamCallback) =>
        fs.utimes(file, atime, mtime, (err) => {
          if (!err) held.freshAt = mtime.getTime();
          done(err);
        }),
    },
    // proper-lockfile throws this from a timer by default, which would end the process.
    onCompromised: (err) => {
      held.lost = err;
    },
  });
  held.freshAt = Date.now();
  try {
    return await heldLocks.run(held, edit);
  } finally {
    if (!held.lost) await release();
  }
}
