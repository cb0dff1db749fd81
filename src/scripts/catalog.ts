/**
 * The scripts folder as a set of URLs (§4.5): scripts/<folder>/<name>.sh is
 * served at /<folder>/<name> and scripts/<name>.sh at /<name>. Every lookup
 * goes to the filesystem, so adding, changing or removing a script takes
 * effect on the next request without a restart or a watcher that can miss
 * events. Parsed settings are cached per file version (inode, size, mtime).
 */
import { constants } from 'node:fs';
import { access, open, readdir, realpath, stat } from 'node:fs/promises';
import { join, sep } from 'node:path';

export const SCRIPT_EXTENSION = '.sh';
export const SCRIPT_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type ScriptMethod = (typeof SCRIPT_METHODS)[number];

/** A folder or script name as it may appear in a URL: no hidden names, no `..`, no separators. */
const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
/** Folders deeper than this are not served (and not walked for the index). */
export const MAX_DEPTH = 8;
/** Only the first bytes of a script are read for its shebang and settings line. */
const HEADER_BYTES = 4096;

export interface ScriptSettings {
  methods: ScriptMethod[];
  /** Milliseconds; 0 = the server's default. */
  timeoutMs: number;
  /** Runs of this script at once; 0 = only the server's global limit. */
  concurrency: number;
  /** Send stderr lines to the client as `event: stderr` (else they are only logged). */
  streamStderr: boolean | null;
}

export interface Script {
  /** The URL path, e.g. `/reports/daily`. */
  urlPath: string;
  /** The file, resolved through any links, inside the scripts folder. */
  file: string;
  /** How to start it: the file itself when executable, else the interpreter its shebang names. */
  command: string;
  args: string[];
  settings: ScriptSettings;
  /** Set when the settings line cannot be read; the script is listed but not run. */
  settingsError: string | null;
}

export const DEFAULT_SETTINGS: ScriptSettings = {
  methods: ['GET', 'POST'],
  timeoutMs: 0,
  concurrency: 0,
  streamStderr: null,
};

export class SettingsError extends Error {}

/** `30s`, `5m`, `1h`, `500ms` or bare seconds → milliseconds. */
function parseDuration(text: string): number {
  const match = /^(\d{1,7})(ms|s|m|h)?$/.exec(text);
  if (!match) throw new SettingsError(`timeout=${text} is not a duration like 30s, 5m or 500ms`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] ?? 's'] ?? 1000;
  const ms = Number(match[1]) * unit;
  if (ms < 1) throw new SettingsError('timeout must be positive');
  return ms;
}

/**
 * Reads the `# offcloud: key=value …` line from a script's header comment
 * block (the comment lines at the top, after the shebang).
 */
export function parseSettings(header: string): ScriptSettings {
  const settings: ScriptSettings = { ...DEFAULT_SETTINGS };
  for (const line of header.split('\n')) {
    if (!line.startsWith('#')) break;
    const match = /^#\s*offcloud:(.*)$/.exec(line);
    if (!match) continue;
    for (const token of (match[1] ?? '').trim().split(/\s+/).filter(Boolean)) {
      const [key, value = ''] = token.split('=', 2) as [string, string?];
      switch (key) {
        case 'methods': {
          const methods = value.toUpperCase().split(',').filter(Boolean);
          const bad = methods.find((m) => !(SCRIPT_METHODS as readonly string[]).includes(m));
          if (!methods.length || bad !== undefined) {
            throw new SettingsError(`methods=${value}: expected a comma-separated list of ${SCRIPT_METHODS.join(', ')}`);
          }
          settings.methods = [...new Set(methods)] as ScriptMethod[];
          break;
        }
        case 'timeout':
          settings.timeoutMs = parseDuration(value);
          break;
        case 'concurrency':
          if (!/^[1-9]\d{0,5}$/.test(value)) throw new SettingsError(`concurrency=${value}: expected a positive integer`);
          settings.concurrency = Number(value);
          break;
        case 'stderr':
          if (value !== 'stream' && value !== 'log') throw new SettingsError(`stderr=${value}: expected stream or log`);
          settings.streamStderr = value === 'stream';
          break;
        default:
          throw new SettingsError(`unknown setting "${key}" (known: methods, timeout, concurrency, stderr)`);
      }
    }
  }
  return settings;
}

/** `#!/usr/bin/env bash` → ['/usr/bin/env', 'bash']: the kernel passes at most one argument too. */
function shebang(header: string): string[] {
  const first = header.split('\n', 1)[0] ?? '';
  if (!first.startsWith('#!')) return ['/bin/sh'];
  const rest = first.slice(2).trim();
  const space = rest.search(/\s/);
  return space < 0 ? [rest] : [rest.slice(0, space), rest.slice(space).trim()];
}

interface CachedHeader {
  version: string;
  settings: ScriptSettings;
  settingsError: string | null;
  interpreter: string[];
}

export class ScriptCatalog {
  private readonly headers = new Map<string, CachedHeader>();

  /**
   * @param root the scripts folder
   * @param reserved top-level URL paths the server answers itself (`/health`)
   */
  constructor(
    readonly root: string,
    private readonly reserved: ReadonlySet<string> = new Set(),
  ) {}

  /** The script served at a raw URL path (no query), or null. Nothing outside the folder is ever named. */
  async find(rawPath: string): Promise<Script | null> {
    const segments = rawPath.split('/').slice(1);
    if (segments.length < 1 || segments.length > MAX_DEPTH + 1) return null;
    const names: string[] = [];
    for (const raw of segments) {
      let name: string;
      try {
        name = decodeURIComponent(raw);
      } catch {
        return null;
      }
      if (!NAME.test(name)) return null;
      names.push(name);
    }
    const urlPath = `/${names.join('/')}`;
    if (this.reserved.has(urlPath)) return null;
    return this.load(join(this.root, ...names) + SCRIPT_EXTENSION, urlPath);
  }

  /** Every script in the folder, sorted by URL path, for the index. */
  async list(): Promise<Script[]> {
    const found: Script[] = [];
    const walk = async (dir: string, prefix: string[]): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch {
        return;
      }
      for (const entry of entries) {
        if (entry.name.endsWith(SCRIPT_EXTENSION) && (entry.isFile() || entry.isSymbolicLink())) {
          const name = entry.name.slice(0, -SCRIPT_EXTENSION.length);
          const urlPath = `/${[...prefix, name].join('/')}`;
          if (!NAME.test(name) || this.reserved.has(urlPath)) continue;
          const script = await this.load(join(dir, entry.name), urlPath);
          if (script) found.push(script);
        } else if (prefix.length < MAX_DEPTH && NAME.test(entry.name) && (entry.isDirectory() || entry.isSymbolicLink())) {
          const inside = await this.inside(join(dir, entry.name));
          if (inside && (await stat(inside)).isDirectory()) await walk(join(dir, entry.name), [...prefix, entry.name]);
        }
      }
    };
    await walk(this.root, []);
    return found.sort((a, b) => a.urlPath.localeCompare(b.urlPath));
  }

  /** The real path of `path` when it lies inside the scripts folder (links followed), else null. */
  private async inside(path: string): Promise<string | null> {
    try {
      const [real, root] = await Promise.all([realpath(path), realpath(this.root)]);
      return real.startsWith(root + sep) ? real : null;
    } catch {
      return null;
    }
  }

  private async load(path: string, urlPath: string): Promise<Script | null> {
    const file = await this.inside(path);
    if (!file) return null;
    const info = await stat(file).catch(() => null);
    if (!info?.isFile()) return null;
    const version = `${info.ino}:${info.size}:${info.mtimeMs}`;
    let header = this.headers.get(file);
    if (header?.version !== version) {
      header = await readHeader(file, version);
      this.headers.set(file, header);
    }
    const executable = await access(file, constants.X_OK).then(
      () => true,
      () => false,
    );
    const [command, ...args] = executable ? [file] : [...header.interpreter, file];
    return {
      urlPath,
      file,
      command: command ?? file,
      args,
      settings: header.settings,
      settingsError: header.settingsError,
    };
  }
}

async function readHeader(file: string, version: string): Promise<CachedHeader> {
  const handle = await open(file, 'r');
  let text: string;
  try {
    const buffer = Buffer.alloc(HEADER_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, HEADER_BYTES, 0);
    text = buffer.subarray(0, bytesRead).toString('utf8').replace(/\r/g, '');
  } finally {
    await handle.close();
  }
  try {
    return { version, settings: parseSettings(text), settingsError: null, interpreter: shebang(text) };
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    return { version, settings: DEFAULT_SETTINGS, settingsError: err.message, interpreter: shebang(text) };
  }
}
