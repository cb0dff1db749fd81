/**
 * A container's blob index on disk, so that a change costs what the change is, not what
 * the container holds:
 *   blobs.json   every blob's record as of the last compaction, written atomically
 *   blobs.log    the changes since, one JSON line each ({"put": record} or {"delete": name}),
 *                flushed to disk before the change is acknowledged
 * Loading replays the log over blobs.json. Once the log holds as many changes as the
 * container has blobs (and at least `compactAfter`), the whole index is written to a new
 * blobs.json and the log emptied: the cost of rewriting is spread over as many changes.
 * Replaying a log that a crash left beside the blobs.json it was folded into gives that
 * same index again (each line sets or removes one blob; the last line for a blob wins), so
 * a crash anywhere in a compaction loses nothing. A line a crash cut short was never
 * acknowledged: it is cut off (common/append-log.ts, as billing's usage log), and the log
 * is folded in at every start.
 * The index is safe on its own against overlapping calls: its changes and compactions run
 * one at a time, in the order they were asked for, and a change reaches memory only once
 * its whole line is on disk. A line the disk did not take whole (a short write, ENOSPC) is
 * cut off the log again and the change refused with the file system's error.
 */
import { join } from 'node:path';
import { AppendLog } from '../../common/append-log.ts';
import { readTextIfPresent, syncDirectory, writeFileAtomic } from '../../common/files.ts';
import { SerialQueue } from '../../common/serial-queue.ts';
import type { BlobRecord } from './store.ts';

type IndexChange = { put: BlobRecord } | { delete: string };

/** The log's entries that are changes; a line of another shape is not one. */
function changesOf(entries: unknown[]): IndexChange[] {
  const changes: IndexChange[] = [];
  for (const entry of entries) {
    const change = entry as Partial<{ put: BlobRecord; delete: string }> | null;
    if (typeof change?.delete === 'string') changes.push({ delete: change.delete });
    else if (typeof change?.put?.name === 'string' && typeof change.put.file === 'string') changes.push({ put: change.put });
  }
  return changes;
}

export class BlobIndex {
  private readonly records = new Map<string, BlobRecord>();
  /** Changes in the log since it was last folded in. */
  private logChanges = 0;
  /** Changes and compactions, one at a time in the order asked for. */
  private readonly turns = new SerialQueue();

  private constructor(
    private readonly dir: string,
    private readonly compactAfter: number,
    private readonly log: AppendLog,
  ) {}

  private get snapshotPath(): string {
    return join(this.dir, 'blobs.json');
  }

  /** An empty index for a new container; its files appear with its first change. */
  static create(dir: string, compactAfter: number): BlobIndex {
    return new BlobIndex(dir, compactAfter, AppendLog.empty(join(dir, 'blobs.log')));
  }

  /** Loads blobs.json and the log's changes over it, and folds the log in. */
  static async load(dir: string, compactAfter: number): Promise<BlobIndex> {
    const { log, entries } = await AppendLog.open(join(dir, 'blobs.log'));
    const index = new BlobIndex(dir, compactAfter, log);
    const snapshot = await readTextIfPresent(index.snapshotPath);
    for (const record of snapshot ? (JSON.parse(snapshot) as BlobRecord[]) : []) index.records.set(record.name, record);
    for (const change of changesOf(entries)) {
      if ('put' in change) index.records.set(change.put.name, change.put);
      else index.records.delete(change.delete);
    }
    if (log.bytes > 0) await index.compact();
    return index;
  }

  get blobs(): ReadonlyMap<string, BlobRecord> {
    return this.records;
  }

  /** Sets a blob's record once the change is on disk. */
  put(record: BlobRecord): Promise<void> {
    return this.turns.run(async () => {
      await this.append({ put: record });
      this.records.set(record.name, record);
    });
  }

  /** Removes a blob's record once the change is on disk. */
  delete(name: string): Promise<void> {
    return this.turns.run(async () => {
      await this.append({ delete: name });
      this.records.delete(name);
    });
  }

  private async append(change: IndexChange): Promise<void> {
    await this.log.append(change);
    this.logChanges++;
  }

  /** Folds the log into blobs.json once it holds as many changes as the container has blobs. */
  compactIfDue(): Promise<void> {
    return this.turns.run(async () => {
      if (this.logChanges >= Math.max(this.compactAfter, this.records.size)) await this.compact();
    });
  }

  /** Writes the whole index to blobs.json and, once that is durable, empties the log. */
  private async compact(): Promise<void> {
    await writeFileAtomic(this.snapshotPath, JSON.stringify([...this.records.values()]));
    await syncDirectory(this.dir);
    await this.log.clear();
    this.logChanges = 0;
  }
}
