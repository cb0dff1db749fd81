/**
 * HTTP basic authentication from an Apache htpasswd file (§5: "a password
 * file; a user is identified by name"). Formats: bcrypt ($2y$/$2a$/$2b$,
 * `htpasswd -B`), apr1 MD5 (`-m`), {SHA} (`-s`) and SHA-256/512 crypt
 * ($5$/$6$, `-2`/`-5`). DES crypt and plain text are refused at start-up with
 * the line named. The file is re-read when it changes on disk.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import apacheMd5 from 'apache-md5';
import bcrypt from 'bcryptjs';
import type { Logger } from 'pino';
import { encrypt as shaCrypt } from 'unixcrypt';
import { ConfigError } from '../common/errors.ts';

// The package's typings declare an ES default export, but it is module.exports = the function.
const aprMd5 = apacheMd5 as unknown as (password: string, salt: string) => string;

type HashKind = 'bcrypt' | 'apr1' | 'sha1' | 'sha-crypt';

interface Entry {
  hash: string;
  kind: HashKind;
}

function hashKind(hash: string): HashKind | null {
  if (/^\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}$/.test(hash)) return 'bcrypt';
  if (hash.startsWith('$apr1$')) return 'apr1';
  if (/^\{SHA\}[A-Za-z0-9+/]{27}=$/.test(hash)) return 'sha1';
  if (/^\$[56]\$/.test(hash)) return 'sha-crypt';
  return null;
}

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

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

async function passwordMatches(password: string, entry: Entry): Promise<boolean> {
  switch (entry.kind) {
    case 'bcrypt':
      return bcrypt.compare(password, entry.hash);
    case 'apr1':
      return sameText(aprMd5(password, entry.hash), entry.hash);
    case 'sha1':
      return sameText(`{SHA}${createHash('sha1').update(password).digest('base64')}`, entry.hash);
    case 'sha-crypt':
      return sameText(shaCrypt(password, entry.hash.slice(0, entry.hash.lastIndexOf('$'))), entry.hash);
  }
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

/** Successful checks remembered, so bcrypt's cost is paid once per user and password. */
const MAX_REMEMBERED = 1000;

export class PasswordFile {
  private remembered = new Map<string, string>();
  /** Checked instead when the user is unknown, so both cases cost about the same. */
  private readonly decoy: Entry = { hash: bcrypt.hashSync('decoy', 5), kind: 'bcrypt' };

  private constructor(
    readonly path: string,
    private entries: Map<string, Entry>,
    private version: string,
    private readonly logger: Logger,
  ) {}

  static async load(path: string, logger: Logger): Promise<PasswordFile> {
    const { text, version } = await readVersioned(path).catch((err: Error) => {
      throw new ConfigError(`cannot read --htpasswd ${path}: ${err.message}`);
    });
    return new PasswordFile(path, parseHtpasswd(text, path), version, logger);
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

  /** The user's name when the Authorization header carries a valid user and password, else null. */
  async authenticate(header: string | undefined): Promise<string | null> {
    await this.refresh();
    const credentials = parseBasicAuthorization(header);
    if (!credentials) return null;
    const entry = this.entries.get(credentials.user);
    const key = `${credentials.user}\0${createHash('sha256').update(credentials.password).digest('base64')}`;
    if (entry && this.remembered.get(key) === entry.hash) return credentials.user;
    const ok = await passwordMatches(credentials.password, entry ?? this.decoy);
    if (!ok || !entry) return null;
    if (this.remembered.size >= MAX_REMEMBERED) this.remembered.clear();
    this.remembered.set(key, entry.hash);
    return credentials.user;
  }
}

function fileVersion(info: { ino: number; size: number; mtimeMs: number }): string {
  return `${info.ino}:${info.size}:${info.mtimeMs}`;
}

async function readVersioned(path: string): Promise<{ text: string; version: string }> {
  const info = await stat(path);
  return { text: await readFile(path, 'utf8'), version: fileVersion(info) };
}
