import { mkdir, open, readdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';

/**
 * Writes a file so that a crash at any moment leaves either the old or the new
 * content: write a temporary file beside it, flush it, then rename over.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o644): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  const handle = await open(temp, 'w', mode);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temp, path);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}

/**
 * Removes the temporary files writeFileAtomic leaves beside `path` when the process
 * dies mid-write; the file's owner calls it at start, before anyone writes it.
 */
export async function removeStaleTemporaries(path: string): Promise<void> {
  const dir = dirname(path);
  const prefix = `${basename(path)}.`;
  const names = await readdir(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    throw err;
  });
  await Promise.all(names.filter((name) => name.startsWith(prefix) && name.endsWith('.tmp')).map((name) => rm(join(dir, name), { force: true })));
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
