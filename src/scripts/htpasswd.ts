/**
 * HTTP basic authentication from an Apache htpasswd file (§5: "a password
 * file; a user is identified by name"). Formats: bcrypt ($2y$/$2a$/$2b$,
 * `htpasswd -B`), apr1 MD5 (`-m`), {SHA} (`-s`) and SHA-256/512 crypt
 * ($5$/$6$, `-2`/`-5`). DES crypt and plain text are refused at start-up with
 * the line named. The file is re-read when it changes on disk. Passwords are
 * checked in a worker thread, and an unknown user's password against one of
 * the file's own hashes, so neither the event loop nor timing gives way.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import type { Logger } from 'pino';
import { ConfigError } from '../common/errors.ts';
import { WorkerPool } from '../common/worker-pool.ts';
import type { HashCheck } from './hash-worker.ts';
import { hashKind, type Entry } from './hashes.ts';

function describeUnsupported(hash: string): string {
  if (/^[./A-Za-z0-9]{13}$/.test(hash)) return 'DES crypt (htpasswd -d) is not supported';
  if (hash.startsWith('$1$')) return 'MD5 crypt ($1$) is not supported';
  return 'the password is not in a supported hash format (plain text is refused)';
}

/** Parses htpasswd text; any line it cannot use stops start-up with its number and user. */
export function parseHtpasswd(text: string, source: string): Map<string, Entry> {
  const entries = new Map<string, Entry>();
  text.split('\n').forEach((raw, index) => {
    const line = raw.replace(/\r$/, '');
    if (!line.trim() || line.startsWith('#')) return;
    const colon = line.indexOf(':');
    const where = `${source}:${index + 1}`;
    if (colon <= 0) throw new ConfigError(`${where}: expected "user:hash"`);
    const user = line.slice(0, colon);
    const hash = line.slice(colon + 1).trim();
    const kind = hashKind(hash);
    if (!kind) {
      throw new ConfigError(`${where}: user "${user}": ${describeUnsupported(hash)}; write it with htpasswd -B (bcrypt), -m, -s, -2 or -5`);
    }
    entries.set(user, { hash, kind });
  });
  return entries;
}

/** `Authorization: Basic base64(user:password)` → its parts, or null. */
export function parseBasicAuthorization(header: string | undefined): { user: string; password: string } | null {
  const match = /^Basic ([A-Za-z0-9+/]+={0,2})$/i.exec(header?.trim() ?? '');
  if (!match) return null;
  const decoded = Buffer.from(match[1] ?? '', 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * Checks passwords in a worker thread, so a burst of wrong passwords (each
 * a bcrypt) leaves the event loop free for every other request. The worker
 * starts on first use and keeps the process alive only while it checks; one
 * that dies or fails a check fails its checks (401), and the next check
 * starts another.
 */
export class HashVerifier {
  private readonly worker = WorkerPool.whenNeeded<HashCheck, boolean>({
    name: 'htpasswd checks',
    module: new URL('./hash-worker.ts', import.meta.url),
    size: 1,
  });

  verify(password: string, entry: Entry): Promise<boolean> {
    return this.worker.run({ password, entry }).catch(() => false);
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}

/** Successful checks remembered, so bcrypt's cost is paid once per user and password. */
const MAX_REMEMBERED = 1000;

export class PasswordFile {
  private remembered = new Map<string, string>();
  /** Keys the choice of stand-in entry for unknown users, so it cannot be predicted from outside. */
  private readonly standInKey = randomBytes(32);

  private constructor(
    readonly path: string,
    private entries: Map<string, Entry>,
    private version: string,
    private readonly logger: Logger,
    readonly verifier: HashVerifier,
  ) {}

  static async load(path: string, logger: Logger, verifier = new HashVerifier()): Promise<PasswordFile> {
    const { text, version } = await readVersioned(path).catch((err: Error) => {
      throw new ConfigError(`cannot read --htpasswd ${path}: ${err.message}`);
    });
    return new PasswordFile(path, parseHtpasswd(text, path), version, logger, verifier);
  }

  /** Re-reads the file when it changed; a broken new version is logged and the old one kept. */
  private async refresh(): Promise<void> {
    const info = await stat(this.path).catch(() => null);
    if (!info || fileVersion(info) === this.version) return;
    try {
      const { text, version } = await readVersioned(this.path);
      this.entries = parseHtpasswd(text, this.path);
      this.version = version;
      this.remembered = new Map();
      this.logger.info({ path: this.path, users: this.entries.size }, 'password file reloaded');
    } catch (err) {
      this.logger.error({ path: this.path, err: (err as Error).message }, 'password file changed but cannot be used; keeping the previous one');
    }
  }

  /**
   * The entry an unknown user's password is checked against: one of the
   * file's own, always the same for a name. A name that does not exist thus
   * costs what a user of the file costs (bcrypt or not, at its cost factor),
   * and timing does not tell which names exist.
   */
  private standIn(user: string): Entry | undefined {
    const entries = [...this.entries.values()];
    if (!entries.length) return undefined;
    return entries[createHmac('sha256', this.standInKey).update(user).digest().readUInt32BE(0) % entries.length];
  }

  /** The user's name when the Authorization header carries a valid user and password, else null. */
  async authenticate(header: string | undefined): Promise<string | null> {
    await this.refresh();
    const credentials = parseBasicAuthorization(header);
    if (!credentials) return null;
    const entry = this.entries.get(credentials.user);
    const key = `${credentials.user}\0${createHash('sha256').update(credentials.password).digest('base64')}`;
    if (entry && this.remembered.get(key) === entry.hash) return credentials.user;
    const checked = entry ?? this.standIn(credentials.user);
    const ok = checked !== undefined && (await this.verifier.verify(credentials.password, checked));
    if (!ok || !entry) return null;
    if (this.remembered.size >= MAX_REMEMBERED) this.remembered.clear();
    this.remembered.set(key, entry.hash);
    return credentials.user;
  }

  close(): Promise<void> {
    return this.verifier.close();
  }
}

function fileVersion(info: { ino: number; size: number; mtimeMs: number }): string {
  return `${info.ino}:${info.size}:${info.mtimeMs}`;
}

async function readVersioned(path: string): Promise<{ text: string; version: string }> {
  const info = await stat(path);
  return { text: await readFile(path, 'utf8'), version: fileVersion(info) };
}
