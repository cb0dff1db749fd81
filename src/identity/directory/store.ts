/**
 * The directory file, by default <data-dir>/identity/directory.json, written
 * atomically; readers reload it when it changes, so CLI edits reach a running
 * server without a restart.
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { stringify as stringifyYaml } from 'yaml';
import { createFileExclusive, withFileLock, writeFileAtomic } from '../../common/files.ts';
import { FollowedFile } from '../followed-file.ts';
import type { Directory } from './model.ts';
import { checkClientSecret } from './secrets.ts';
import { seedDirectory, type SeedResult } from './seed.ts';
import { isYaml, parseDirectory } from './validate.ts';

export function defaultDirectoryPath(dataDir: string): string {
  return resolve(dataDir, 'identity', 'directory.json');
}

function serialize(path: string, directory: Directory): string {
  return isYaml(path) ? stringifyYaml(directory) : `${JSON.stringify(directory, null, 2)}\n`;
}

/**
 * One directory file: `current()` rereads it when it was replaced (one stat
 * otherwise), `update()` applies a change and writes it atomically.
 */
export class DirectoryStore {
  private readonly file: FollowedFile<Directory>;

  constructor(readonly path: string) {
    this.file = new FollowedFile(path, (content) => parseDirectory(path, content));
  }

  /** Creates the file with the first-start seed if it is missing; returns the seed when this call made it. */
  /**
   * The demo client's secret, kept beside the directory: it is a demo, and a
   * user must be able to get it after a first start that failed half-way
   * (`offcloud env` prints it). Secrets a user adds stay shown once.
   */
  get demoSecretPath(): string {
    return resolve(dirname(this.path), 'demo-client-secret');
  }

  async ensure(): Promise<SeedResult | null> {
    if (await this.file.exists()) return null;
    // Under the file's lock: of processes starting together, only the one that makes the
    // directory writes the demo secret, so the secret kept is that of the directory kept.
    return withFileLock(this.path, async () => {
      if (await this.file.exists()) return null;
      const seed = seedDirectory();
      // The secret first: whoever makes the directory (identity, or storage reading it) must not lose it.
      await writeFileAtomic(this.demoSecretPath, `${seed.directory.clients[0]!.appId} ${seed.demoClientSecret}\n`, 0o600);
      return (await createFileExclusive(this.path, serialize(this.path, seed.directory), 0o600)) ? seed : null;
    });
  }

  /** The demo client's id and secret when the seed made them and the client still has that secret. */
  async demoClient(): Promise<{ appId: string; secret: string } | null> {
    const [appId, secret] = (await readFile(this.demoSecretPath, 'utf8').catch(() => '')).trim().split(' ');
    if (!appId || !secret) return null;
    const client = (await this.current()).clients.find((c) => c.appId === appId);
    return client && checkClientSecret(client, secret).ok ? { appId, secret } : null;
  }

  current(): Promise<Directory> {
    return this.file.current();
  }

  /** Applies a change to the file as it is now, holding its lock: commands editing at once keep each other's edits. */
  update<T>(change: (directory: Directory) => T): Promise<T> {
    return withFileLock(this.path, async () => {
      const directory = structuredClone(await this.file.fresh());
      const result = change(directory);
      await writeFileAtomic(this.path, serialize(this.path, directory), 0o600);
      return result;
    });
  }
}

/**
 * For other components (storage): the directory of a data dir, made with the
 * first-start seed when missing. Pass `file` when identity runs with `--directory`.
 */
export async function loadDirectory(dataDir: string, file?: string): Promise<Directory> {
  const store = openDirectory(dataDir, file);
  await store.ensure();
  return store.current();
}

/** A store that follows CLI edits: call `current()` per request (one stat when nothing changed). */
export function openDirectory(dataDir: string, file?: string): DirectoryStore {
  return new DirectoryStore(file ? resolve(file) : defaultDirectoryPath(dataDir));
}
