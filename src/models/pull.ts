/**
 * `offcloud models pull`: downloads model files from their public upstream
 * URLs (or a --mirror holding the same relative paths), checks each one's
 * sha256 while it streams to a temporary file beside the target, and renames
 * it into place only when the checksum matches.
 *
 * Downloads go through node:http(s), not undici's fetch: undici 7 asserts
 * (`assert(!this.paused)`, an uncatchable crash) when a server closes the
 * connection while the body is held back by a slow disk, which is what every
 * HTTP/1.0 file server does (`python3 -m http.server`); fixed only in undici 8,
 * which needs Node 22.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { get as httpGet, type IncomingMessage } from 'node:http';
import { get as httpsGet } from 'node:https';
import { dirname, join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { StartupError } from '../common/errors.ts';
import type { ModelFile } from './catalogue.ts';

export class ChecksumError extends StartupError {}

/** What a pull reports while it works: a line per step, and bytes received of a file being downloaded. */
export interface PullProgress {
  line(text: string): void;
  bytes?(file: ModelFile, received: number): void;
}

export interface PullOptions {
  /** The models folder to fill (the same layout the lookup searches). */
  targetDir: string;
  /** Base URL that holds the files under their relative paths, instead of each upstream URL. */
  mirror?: string;
  /** Download even when a file with the right checksum is already there. */
  force?: boolean;
  progress?: PullProgress;
  /** Most time one file's download may take, redirects included (default DOWNLOAD_DEADLINE_MS). */
  deadlineMs?: number;
}

export interface PullOutcome {
  file: ModelFile;
  path: string;
  status: 'present' | 'downloaded';
}

export async function sha256OfFile(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

async function hasChecksum(path: string, sha256: string): Promise<boolean> {
  try {
    await stat(path);
  } catch {
    return false;
  }
  return (await sha256OfFile(path)) === sha256;
}

export function sourceUrl(file: ModelFile, mirror?: string): string {
  return mirror ? `${mirror.replace(/\/+$/, '')}/${file.relativePath}` : file.url;
}

/** `text` as an http: or https: URL (`base` resolves a relative one), or a one-line error saying what it is. */
function httpUrl(text: string, what: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(text, base);
  } catch {
    throw new StartupError(`${what} ${JSON.stringify(text.slice(0, 200))}: not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new StartupError(`${what} ${url.href.slice(0, 200)}: not an http: or https: URL`);
  return url;
}

/** Error codes that mean "no network here" rather than "this server is broken". */
const OFFLINE_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH', 'ECONNREFUSED', 'ETIMEDOUT', 'ECONNRESET']);
const MAX_REDIRECTS = 5;
const CONNECT_TIMEOUT_MS = 15_000;
/** A 4 MB file within this is 7 kB/s: a server slower than that, or trickling for ever, is given up on. */
export const DOWNLOAD_DEADLINE_MS = 10 * 60_000;

function cannotDownload(url: string, err: NodeJS.ErrnoException, mirror: boolean): StartupError {
  const host = new URL(url).host;
  if (!err.code || !OFFLINE_CODES.has(err.code)) return new StartupError(`cannot download ${url}: ${err.message}`);
  const advice = mirror
    ? 'check that the mirror is running and that --mirror is its base URL'
    : 'this machine seems to be offline. The default weights already ship in the package\'s models/ folder; on an air-gapped site, serve the files ' +
      '(e.g. `python3 -m http.server` in a folder laid out like models/) and run `offcloud models pull --mirror http://<host>:<port>`, ' +
      'or copy them into the --models-dir folder';
  return new StartupError(`cannot download ${url}: cannot reach ${host} (${err.code}); ${advice}`);
}

/** GET that follows redirects (GitHub's raw URLs redirect) to http: and https: only; resolves with a 200 response. */
function open(url: URL, file: ModelFile, mirror: boolean, deadline: { signal: AbortSignal; ms: number }, redirects = 0): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const get = url.protocol === 'https:' ? httpsGet : httpGet;
    const request = get(url, { timeout: CONNECT_TIMEOUT_MS, signal: deadline.signal }, (response) => {
      const status = response.statusCode ?? 0;
      const location = response.headers.location;
      if (status >= 300 && status < 400 && location) {
        response.resume();
        if (redirects >= MAX_REDIRECTS) return reject(new StartupError(`cannot download ${url.href}: more than ${MAX_REDIRECTS} redirects`));
        try {
          return resolve(open(httpUrl(location, `cannot download ${url.href}: it redirects to`, url), file, mirror, deadline, redirects + 1));
        } catch (err) {
          return reject(err as Error);
        }
      }
      if (status !== 200) {
        response.resume();
        return reject(new StartupError(`cannot download ${url.href}: the server answered ${status}`));
      }
      if (Number(response.headers['content-length']) > file.size) {
        response.destroy();
        return reject(tooLarge(url, file));
      }
      resolve(response);
    });
    request.on('timeout', () => request.destroy(Object.assign(new Error('no answer'), { code: 'ETIMEDOUT' })));
    request.on('error', (err) => reject(deadline.signal.aborted ? overDeadline(url, deadline.ms) : cannotDownload(url.href, err, mirror)));
  });
}

function tooLarge(url: URL, file: ModelFile): StartupError {
  return new StartupError(`${url.href}: the server sends more than the catalogued ${file.size} bytes; the file was not saved`);
}

function overDeadline(url: URL, deadlineMs: number): StartupError {
  return new StartupError(`cannot download ${url.href}: not done within ${deadlineMs / 1000} s; the file was not saved`);
}

async function download(file: ModelFile, source: string, path: string, options: PullOptions): Promise<void> {
  const mirror = options.mirror !== undefined;
  const url = httpUrl(source, mirror ? 'the mirror URL' : 'the catalogued URL');
  const ms = options.deadlineMs ?? DOWNLOAD_DEADLINE_MS;
  const deadline = { signal: AbortSignal.timeout(ms), ms };
  const response = await open(url, file, mirror, deadline);
  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.${randomBytes(6).toString('hex')}.download`;
  const hash = createHash('sha256');
  let received = 0;
  const hashing = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      received += chunk.length;
      // An endless body stops at the catalogued size, not at a full disk.
      if (received > file.size) return done(tooLarge(url, file));
      hash.update(chunk);
      options.progress?.bytes?.(file, received);
      done(null, chunk);
    },
  });
  try {
    await pipeline(response, hashing, createWriteStream(temp, { mode: 0o644 }), { signal: deadline.signal }).catch((err: NodeJS.ErrnoException) => {
      if (err instanceof StartupError) throw err;
      throw deadline.signal.aborted ? overDeadline(url, ms) : cannotDownload(url.href, err, mirror);
    });
    const actual = hash.digest('hex');
    if (actual !== file.sha256) {
      throw new ChecksumError(`${url.href}: sha256 is ${actual}, expected ${file.sha256}; the file was not saved`);
    }
    await rename(temp, path);
  } finally {
    await rm(temp, { force: true });
  }
}

/** Fetches each missing (or, with force, every) file; stops at the first failure. */
export async function pullModelFiles(files: readonly ModelFile[], options: PullOptions): Promise<PullOutcome[]> {
  const outcomes: PullOutcome[] = [];
  for (const file of files) {
    const path = join(options.targetDir, file.relativePath);
    if (!options.force && (await hasChecksum(path, file.sha256))) {
      options.progress?.line(`${file.relativePath}: present, checksum ok`);
      outcomes.push({ file, path, status: 'present' });
      continue;
    }
    const url = sourceUrl(file, options.mirror);
    options.progress?.line(`${file.relativePath}: downloading ${url} (${(file.size / 1e6).toFixed(1)} MB)`);
    await download(file, url, path, options);
    options.progress?.line(`${file.relativePath}: saved to ${path}, sha256 ok`);
    outcomes.push({ file, path, status: 'downloaded' });
  }
  return outcomes;
}
