/**
 * What the script server keeps on disk: the ACME account (one per ACME
 * server) and the issued certificate with its key, under
 * <data-dir>/scripts/acme. Every write is atomic, keys are private to the user.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../common/files.ts';

export interface StoredCertificate {
  cert: string;
  key: string;
}

export class AcmeStore {
  private readonly dir: string;

  constructor(dataDir: string) {
    this.dir = join(dataDir, 'scripts', 'acme');
  }

  /** The stored certificate chain and key for the domain, or null when there is none yet. */
  async certificate(domain: string): Promise<StoredCertificate | null> {
    try {
      const [cert, key] = await Promise.all([readFile(join(this.dir, `${domain}.crt`), 'utf8'), readFile(join(this.dir, `${domain}.key`), 'utf8')]);
      return { cert, key };
    } catch {
      return null;
    }
  }

  async saveCertificate(domain: string, chain: string, key: Buffer | string): Promise<void> {
    await writeFileAtomic(join(this.dir, `${domain}.key`), key, 0o600);
    await writeFileAtomic(join(this.dir, `${domain}.crt`), chain, 0o644);
  }

  /** The account key for the ACME server, made (by `create`) and kept on first use. */
  async accountKey(directoryUrl: string, create: () => Promise<Buffer>): Promise<Buffer> {
    const path = this.accountPath(directoryUrl, 'account.key');
    try {
      return await readFile(path);
    } catch {
      const key = await create();
      await writeFileAtomic(path, key, 0o600);
      return key;
    }
  }

  /** The account's URL at the ACME server once registered, else ''. */
  accountUrl(directoryUrl: string): Promise<string> {
    return readFile(this.accountPath(directoryUrl, 'account.url'), 'utf8').catch(() => '');
  }

  saveAccountUrl(directoryUrl: string, url: string): Promise<void> {
    return writeFileAtomic(this.accountPath(directoryUrl, 'account.url'), url, 0o600);
  }

  /** Accounts belong to one ACME server: one folder per directory URL. */
  private accountPath(directoryUrl: string, name: string): string {
    const server = createHash('sha256').update(directoryUrl).digest('hex').slice(0, 16);
    return join(this.dir, 'accounts', server, name);
  }
}
