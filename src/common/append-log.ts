/**
 * An append-only log of JSON lines (billing's usage reports, a container's blob index
 * changes): each line is whole and flushed to disk before its change is acknowledged.
 *
 * Opening a log reads its whole lines. A last line a crash cut short was never
 * acknowledged: it is cut off the file. A whole line that is not JSON is what is left of a
 * refused write that could not be cut back (see writeWholeAt): it was never acknowledged
 * either, and is skipped. A line the disk does not take whole is cut off again and its
 * append refused with the file system's error, so the next line goes where it would have.
 *
 * Appends must not overlap: callers run them one at a time (a SerialQueue).
 */
import { open, truncate } from 'node:fs/promises';
import { dirname } from 'node:path';
import { readTextIfPresent, syncDirectory, writeWholeAt } from './files.ts';

export class AppendLog {
  private constructor(
    readonly path: string,
    private readonly mode: number,
    /** Bytes of whole lines: the next line is written here, over anything a failed write left. */
    private length: number,
    /** Whether the file's folder entry is on disk (a new log's is synced after its first line). */
    private onDisk: boolean,
  ) {}

  /** A log whose file does not exist yet: it appears with the first line. */
  static empty(path: string, mode = 0o644): AppendLog {
    return new AppendLog(path, mode, 0, false);
  }

  /** Opens the log at `path` (none yet is an empty log) and returns its entries, oldest first. */
  static async open(path: string, mode = 0o644): Promise<{ log: AppendLog; entries: unknown[] }> {
    const text = await readTextIfPresent(path);
    if (text === undefined) return { log: AppendLog.empty(path, mode), entries: [] };
    const whole = text.slice(0, text.lastIndexOf('\n') + 1);
    const log = new AppendLog(path, mode, Buffer.byteLength(whole), true);
    if (whole.length < text.length) await truncate(path, log.length);
    const entries: unknown[] = [];
    for (const line of whole.split('\n').slice(0, -1)) {
      try {
        entries.push(JSON.parse(line));
      } catch {
        // Left by a refused write: never acknowledged.
      }
    }
    return { log, entries };
  }

  /** Bytes of whole lines in the log. */
  get bytes(): number {
    return this.length;
  }

  /** Writes `entry` as one line and flushes it, or cuts the log back to its acknowledged end and throws. */
  async append(entry: unknown): Promise<void> {
    const line = Buffer.from(JSON.stringify(entry) + '\n');
    await writeWholeAt(this.path, this.length, line, this.mode);
    if (!this.onDisk) {
      try {
        await syncDirectory(dirname(this.path));
      } catch (err) {
        await truncate(this.path, this.length).catch(() => undefined);
        throw err;
      }
      this.onDisk = true;
    }
    this.length += line.length;
  }

  /** Empties the log, durably (its entries were folded into a snapshot written before). */
  async clear(): Promise<void> {
    const handle = await open(this.path, 'w', this.mode);
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    this.length = 0;
  }
}
