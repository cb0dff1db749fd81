/**
 * Files the identity servers read on every request but that the CLI may
 * change underneath them (directory, signing keys): reread only when the file
 * was replaced, and created exclusively so that processes starting together
 * agree on one first version.
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

export class FollowedFile<T> {
  private cached: { value: T; stamp: string } | null = null;

  constructor(
    readonly path: string,
    private readonly parse: (content: string) => T,
  ) {}

  async current(): Promise<T> {
    const info = await stat(this.path);
    // Writers rename a new file into place, so the inode changes even within one mtime tick.
    const stamp = `${info.ino}:${info.mtimeMs}:${info.size}`;
    if (this.cached?.stamp === stamp) return this.cached.value;
    const value = this.parse(await readFile(this.path, 'utf8'));
    this.cached = { value, stamp };
    return value;
  }

  /** Rereads the file now (after this process wrote it). */
  async fresh(): Promise<T> {
    this.cached = null;
    return this.current();
  }

  async exists(): Promise<boolean> {
    try {
      await stat(this.path);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
  }
}

/**
 * Writes `content` to `path` unless the file exists: written beside it, then
 * hard-linked into place, which fails when another process got there first.
 * Returns false when the file already existed.
 */
export async function createFileExclusive(path: string, content: string, mode: number): Promise<boolean> {
  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.${randomBytes(6).toString('hex')}.new`;
  await writeFile(temp, content, { mode });
  try {
    await link(temp, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    await rm(temp, { force: true });
  }
}
