/**
 * Files the identity servers read on every request but that the CLI may
 * change underneath them (directory, signing keys): reread only when the file
 * was replaced (they are created with createFileExclusive, so that processes
 * starting together agree on one first version).
 *
 * The check on every request is a synchronous stat: a few microseconds on an
 * inode the kernel has cached, where the promise API sends each stat to the
 * thread pool and back (two thread wake-ups per file per token, which on a
 * busy machine cost more than the signature).
 */
import { statSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';

export class FollowedFile<T> {
  private cached: { value: T; stamp: string } | null = null;

  constructor(
    readonly path: string,
    private readonly parse: (content: string) => T,
  ) {}

  async current(): Promise<T> {
    const info = statSync(this.path);
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
