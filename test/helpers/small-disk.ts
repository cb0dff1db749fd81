/**
 * A small disk for disk-full tests: a tmpfs of a few MiB mounted on a fresh folder (the
 * suites run as root, as CI does), filled up on demand and given its space back, and
 * unmounted when the test file's process ends.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export class SmallDisk {
  private fillers = 0;

  constructor(readonly path: string) {}

  /** Writes filler files until the disk refuses more; resolves with how many bytes they took. */
  async fill(): Promise<number> {
    const handle = await open(join(this.path, `filler-${this.fillers++}`), 'w');
    const chunk = Buffer.alloc(64 * 1024);
    let written = 0;
    try {
      for (let size = chunk.length; size >= 1;) {
        try {
          const { bytesWritten } = await handle.write(chunk, 0, size);
          written += bytesWritten;
          if (bytesWritten < size) size = Math.floor(size / 2);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
          size = Math.floor(size / 2);
        }
      }
    } finally {
      await handle.close();
    }
    return written;
  }

  /** Removes every filler: the space comes back. */
  async free(): Promise<void> {
    for (let i = 0; i < this.fillers; i++) await rm(join(this.path, `filler-${i}`), { force: true });
    this.fillers = 0;
  }
}

/**
 * Mounts a tmpfs of `bytes` on a new folder and returns it; unmounted in `t.after`
 * (lazily, so a server still holding files open cannot keep it, and within 10 s).
 */
export async function smallDisk(t: { after(fn: () => unknown): void }, bytes: number): Promise<SmallDisk> {
  const path = await mkdtemp(join(tmpdir(), 'offcloud-small-disk-'));
  try {
    await run('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0700`, 'tmpfs', path], { timeout: 10_000 });
  } catch (err) {
    throw new Error(`a disk-full test mounts a tmpfs and needs root (as CI runs): ${(err as Error).message}`);
  }
  t.after(async () => {
    await run('umount', ['--lazy', path], { timeout: 10_000 });
    await rm(path, { recursive: true, force: true });
  });
  return new SmallDisk(path);
}
