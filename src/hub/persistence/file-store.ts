/**
 * The embedded store: registry and twins as one JSON file per identity, and
 * each device's C2D queue in a file beside it, all written atomically in the
 * data dir before the answer goes out (by DurableWriter's worker thread; a
 * new identity's file by an exclusive link); presence in memory.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { claimC2d, expireC2d, liveC2d, MAX_PENDING_C2D, queueFull, type C2dMessage, type DeadC2d } from '../domain/messages.ts';
import { newPolicies, withMissingPolicies, type Policies } from '../domain/policies.ts';
import { alreadyExists, identityKey, notFound, parseIdentityKey, type IdentityRecord } from '../domain/registry.ts';
import { MAX_KEPT_FEEDBACK, type HubStore, type IdentityChange } from '../domain/store.ts';
import type { KeptFeedback } from '../domain/service-queue.ts';
import type { CaCertificates } from '../domain/x509.ts';
import { createFileExclusive, removeFile, removeStaleTemporariesIn, withFileLock } from '../../common/files.ts';
import { DurableWriter, fileVersion, StaleFile } from './durable-writer.ts';
import { KeyedSerialQueue } from '../../common/serial-queue.ts';

/** A device's pending C2D messages and whether a clean=false session keeps its subscription. */
interface C2dState {
  subscribed: boolean;
  messages: C2dMessage[];
}

/** A record as this process last wrote it, and the version of the file that holds it. */
interface KnownRecord {
  record: IdentityRecord;
  version: string | null;
}

/** Records remembered for read-modify-write; the least recently written go first. */
const MAX_KNOWN_RECORDS = 10_000;

export class FileStore implements HubStore {
  private readonly dir: string;
  private readonly writes = new KeyedSerialQueue();
  private readonly writer = new DurableWriter();
  private readonly known = new Map<string, KnownRecord>();
  private readonly online = new Map<string, string>();

  constructor(dataDir: string) {
    this.dir = join(dataDir, 'hub');
  }

  /** Ids never reach the filesystem: a file is named by the hash of its identity key. */
  private pathOf(key: string, folder = 'identities'): string {
    return join(this.dir, folder, `${createHash('sha256').update(key).digest('hex')}.json`);
  }

  private async read(path: string): Promise<IdentityRecord | undefined> {
    try {
      return JSON.parse(await readFile(path, 'utf8')) as IdentityRecord;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  /** Writes a record; with `expected`, only while its file is still that version (StaleFile otherwise). */
  private async write(record: IdentityRecord, expected?: string | null): Promise<void> {
    const key = identityKey(record);
    const version = await this.writer.write(this.pathOf(key), JSON.stringify(record), 0o600, expected);
    this.known.delete(key);
    this.known.set(key, { record, version });
    if (this.known.size > MAX_KNOWN_RECORDS) this.known.delete(this.known.keys().next().value!);
  }

  /** The version is taken first: a write in between makes it older than the content, so a conditional write fails safe. */
  private async readKnown(key: string): Promise<KnownRecord | undefined> {
    const version = await fileVersion(this.pathOf(key));
    const record = version === null ? undefined : await this.getIdentity(key);
    return record && { record, version };
  }

  getIdentity(key: string): Promise<IdentityRecord | undefined> {
    return this.read(this.pathOf(key));
  }

  async listIdentities(modulesOf?: string): Promise<IdentityRecord[]> {
    let names: string[];
    try {
      names = (await readdir(join(this.dir, 'identities'))).filter((n) => n.endsWith('.json'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const records = await Promise.all(names.map((n) => this.read(join(this.dir, 'identities', n))));
    return records
      .filter((r): r is IdentityRecord => r !== undefined && (modulesOf === undefined ? !r.moduleId : r.deviceId === modulesOf && !!r.moduleId))
      .sort((a, b) => identityKey(a).localeCompare(identityKey(b)));
  }

  /**
   * Exclusive across processes: the file is linked into place only where none
   * is, so of two creations at once (the hub and `offcloud hub device create`,
   * or two commands) one gets DeviceAlreadyExists. Not remembered in `known`:
   * the first update reads the file's version, after any other process's write.
   */
  createIdentity(record: IdentityRecord): Promise<IdentityRecord> {
    const key = identityKey(record);
    return this.writes.run(key, async () => {
      this.known.delete(key);
      if (!(await createFileExclusive(this.pathOf(key), JSON.stringify(record), 0o600))) throw alreadyExists(record);
      return record;
    });
  }

  /**
   * Starts from the record this process last wrote, without reading it back, and
   * writes only if no one else (`offcloud hub device …` in another process) has
   * changed the file since: the worker compares and renames holding the file's
   * lock. If someone has, it reads, changes and writes the file holding the lock
   * itself, so a file another process keeps writing cannot starve the update.
   */
  updateIdentity(key: string, change: IdentityChange): Promise<IdentityRecord> {
    return this.writes.run(key, async () => {
      const base = this.known.get(key) ?? (await this.readKnown(key));
      if (!base) throw this.missing(key);
      const next = change(base.record);
      try {
        await this.write(next, base.version);
        return next;
      } catch (err) {
        this.known.delete(key);
        if (!(err instanceof StaleFile)) throw err;
      }
      return withFileLock(this.pathOf(key), async () => {
        const current = await this.getIdentity(key);
        if (!current) throw this.missing(key);
        const changed = change(current);
        // Unconditional on purpose: this process holds the file's lock, which a checked write would take again.
        // The worker is handed the lock's state with it, and refuses the rename once the lock may be lost.
        await this.write(changed);
        return changed;
      });
    });
  }

  private missing(key: string): Error {
    return notFound(parseIdentityKey(key) ?? { deviceId: key });
  }

  async deleteIdentity(key: string): Promise<boolean> {
    const modules = key.includes('/') ? [] : await this.listIdentities(key);
    for (const module of modules) await this.deleteIdentity(identityKey(module));
    return this.writes.run(key, async () => {
      this.known.delete(key);
      // Under the file's lock, as conditional writes compare and rename: none can put the file back after it is gone.
      // removeFile refuses once the lock is lost, as a write would: a command stopped mid-delete removes no later write.
      const removed = await withFileLock(this.pathOf(key), async () => {
        if (!(await this.getIdentity(key))) return false;
        await removeFile(this.pathOf(key));
        return true;
      });
      if (!removed) return false;
      if (!key.includes('/')) await this.writes.run(`c2d:${key}`, () => rm(this.pathOf(key, 'c2d'), { force: true }));
      return true;
    });
  }

  policies(): Promise<Policies> {
    const path = join(this.dir, 'policies.json');
    return this.writes.run('\0policies', async () => {
      let stored: Policies = {};
      try {
        stored = JSON.parse(await readFile(path, 'utf8')) as Policies;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        stored = newPolicies();
        await this.writer.write(path, JSON.stringify(stored, null, 2), 0o600);
      }
      const { policies, added } = withMissingPolicies(stored);
      if (added) await this.writer.write(path, JSON.stringify(policies, null, 2), 0o600);
      return policies;
    });
  }

  async caCertificates(): Promise<CaCertificates> {
    try {
      return JSON.parse(await readFile(join(this.dir, 'certificates.json'), 'utf8')) as CaCertificates;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw err;
    }
  }

  /** Only the hub writes the CA certificates (its REST API), so a queue in this process orders the writes. */
  updateCaCertificates(change: (current: CaCertificates) => CaCertificates): Promise<CaCertificates> {
    return this.writes.run('\0certificates', async () => {
      const next = change(await this.caCertificates());
      await this.writer.write(join(this.dir, 'certificates.json'), JSON.stringify(next, null, 2), 0o600);
      return next;
    });
  }

  /** A device's C2D file as it is, expired messages included (only enqueue and claim take them out, as dead letters). */
  private async readC2d(deviceId: string): Promise<C2dState> {
    try {
      return JSON.parse(await readFile(this.pathOf(deviceId, 'c2d'), 'utf8')) as C2dState;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { subscribed: false, messages: [] };
      throw err;
    }
  }

  /** Read-modify-write of a device's C2D file; acknowledged messages are on disk before the 201. */
  private changeC2d<T>(deviceId: string, change: (state: C2dState) => { state: C2dState; result: T }): Promise<T> {
    return this.writes.run(`c2d:${deviceId}`, async () => {
      const { state, result } = change(await this.readC2d(deviceId));
      await this.writer.write(this.pathOf(deviceId, 'c2d'), JSON.stringify(state), 0o600);
      return result;
    });
  }

  enqueueC2d(deviceId: string, message: C2dMessage, now: number): Promise<DeadC2d[]> {
    return this.changeC2d(deviceId, (state) => {
      const { messages, dead } = expireC2d(state.messages, now);
      if (messages.length >= MAX_PENDING_C2D) throw queueFull(deviceId);
      return { state: { ...state, messages: [...messages, message] }, result: dead };
    });
  }

  async nextC2d(deviceId: string, now = Date.now()): Promise<C2dMessage | undefined> {
    return liveC2d((await this.readC2d(deviceId)).messages, now)[0];
  }

  claimC2d(deviceId: string, now: number, maxDeliveries: number): Promise<{ message: C2dMessage | undefined; dead: DeadC2d[] }> {
    return this.changeC2d(deviceId, (state) => {
      const { messages, message, dead } = claimC2d(state.messages, now, maxDeliveries);
      return { state: { ...state, messages }, result: { message, dead } };
    });
  }

  completeC2d(deviceId: string, id: string): Promise<void> {
    return this.changeC2d(deviceId, (state) => ({ state: { ...state, messages: state.messages.filter((m) => m.id !== id) }, result: undefined }));
  }

  async pendingC2d(deviceId: string, now = Date.now()): Promise<number> {
    return liveC2d((await this.readC2d(deviceId)).messages, now).length;
  }

  async setPersistentC2dSubscription(deviceId: string, kept: boolean): Promise<void> {
    if ((await this.readC2d(deviceId)).subscribed === kept) return;
    await this.changeC2d(deviceId, (state) => ({ state: { ...state, subscribed: kept }, result: undefined }));
  }

  async hasPersistentC2dSubscription(deviceId: string): Promise<boolean> {
    return (await this.readC2d(deviceId)).subscribed;
  }

  private async readFeedback(): Promise<KeptFeedback[]> {
    try {
      return JSON.parse(await readFile(join(this.dir, 'feedback.json'), 'utf8')) as KeptFeedback[];
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
  }

  /** Only the hub writes feedback, so a queue in this process orders the writes. */
  private changeFeedback(change: (kept: KeptFeedback[]) => KeptFeedback[]): Promise<void> {
    return this.writes.run('\0feedback', async () => {
      await this.writer.write(join(this.dir, 'feedback.json'), JSON.stringify(change(await this.readFeedback())), 0o600);
    });
  }

  keepFeedback(kept: KeptFeedback): Promise<void> {
    return this.changeFeedback((all) => [...all, kept].slice(-MAX_KEPT_FEEDBACK));
  }

  keptFeedback(): Promise<KeptFeedback[]> {
    return this.readFeedback();
  }

  dropFeedback(id: string): Promise<void> {
    return this.changeFeedback((all) => all.filter((k) => k.id !== id));
  }

  async setOnline(key: string, connectionId: string): Promise<void> {
    this.online.set(key, connectionId);
  }

  async setOffline(key: string, connectionId: string): Promise<void> {
    if (this.online.get(key) === connectionId) this.online.delete(key);
  }

  async isOnline(key: string): Promise<boolean> {
    return this.online.has(key);
  }

  /**
   * Removes what writes cut off by a crash left beside the files (no stray temporary
   * files may pile up), and the locks of identity files a killed hub held mid-write,
   * which would otherwise hold that device's writes back until they are stale (10 s).
   * The hub server calls it at start; a command must not, since a running hub may be
   * in the middle of a write.
   */
  async removeStaleTemporaries(): Promise<void> {
    await Promise.all([
      removeStaleTemporariesIn(this.dir),
      removeStaleTemporariesIn(join(this.dir, 'identities'), { locks: true }),
      removeStaleTemporariesIn(join(this.dir, 'c2d')),
    ]);
  }

  close(): Promise<void> {
    return this.writer.close();
  }
}
