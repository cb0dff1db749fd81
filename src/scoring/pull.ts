/**
 * `offcloud models pull`: downloads the default model files from their public
 * upstream URLs (or a --mirror holding the same relative paths), checks each
 * one's sha256 while it streams to a temporary file beside the target, and
 * renames it into place only when the checksum matches.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fetch } from 'undici';
import { StartupError } from '../common/errors.ts';
import type { ModelFile } from './model-files.ts';

export class ChecksumError extends StartupError {}

export interface PullOptions {
  /** The models folder to fill (the same layout the lookup searches). */
  targetDir: string;
  /** Base URL that holds the files under their relative paths, instead of each upstream URL. */
  mirror?: string;
  /** Download even when a file with the right checksum is already there. */
  force?: boolean;
  progress?: (line: string) => void;
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

async function download(file: ModelFile, url: string, path: string): Promise<void> {
  let response: Awaited<ReturnType<typeof fetch>>;
  try {
    response = await fetch(url);
  } catch (err) {
    throw new StartupError(`cannot download ${url}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`);
  }
  if (response.status !== 200 || !response.body) {
    await response.body?.cancel();
    throw new StartupError(`cannot download ${url}: the server answered ${response.status}`);
  }
  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.${randomBytes(6).toString('hex')}.download`;
  const hash = createHash('sha256');
  const hashing = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
  try {
    await pipeline(Readable.fromWeb(response.body), hashing, createWriteStream(temp, { mode: 0o644 }));
    const actual = hash.digest('hex');
    if (actual !== file.sha256) {
      throw new ChecksumError(`${url}: sha256 is ${actual}, expected ${file.sha256}; the file was not saved`);
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
      options.progress?.(`${file.relativePath}: present, checksum ok`);
      outcomes.push({ file, path, status: 'present' });
      continue;
    }
    const url = sourceUrl(file, options.mirror);
    options.progress?.(`${file.relativePath}: downloading ${url} (${(file.size / 1e6).toFixed(1)} MB)`);
    await download(file, url, path);
    options.progress?.(`${file.relativePath}: saved to ${path}, sha256 ok`);
    outcomes.push({ file, path, status: 'downloaded' });
  }
  return outcomes;
}
