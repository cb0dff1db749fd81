import { link, mkdir, open, readdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { lock } from 'proper-lockfile';

/** Whether a file operation failed because the disk (or the user's disk quota) is full. */
export function isDiskFull(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
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

/**
 * Runs a read-modify-write of `path` holding its lock, `<path>.lock` (a folder
 * proper-lockfile makes atomically and refreshes while held), so that commands
 * editing one file at once each see the others' edits: without it two read the
 * same version and the second write drops the first's edit. Others wait for it
 * up to about twice the stale time, so a lock a killed command left is taken over.
 */
export async function withFileLock<T>(path: string, edit: () => Promise<T>): Promise<T> {
  await mkdir(dirname(path), { recursive: true });
  const release = await lock(path, {
    realpath: false,
    stale: LOCK_STALE_MS,
    retries: { retries: 200, factor: 1.3, minTimeout: 5, maxTimeout: 100, randomize: true },
  });
  try {
    return await edit();
  } finally {
    await release();
  }
}
