/**
 * Storage accounts of a data dir (<data-dir>/storage/accounts.json): names and
 * their two account keys (for Shared Key and SAS requests and connection strings).
 * The default account is made on first start. The development account's first key
 * is the publicly documented development key, so that `UseDevelopmentStorage=true`
 * works verbatim; other accounts get random keys.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { removeStaleTemporaries, writeFileAtomic } from '../../common/files.ts';
import { StartupError } from '../../common/errors.ts';

export interface StorageAccount {
  name: string;
  /** Base64 account keys; either one signs Shared Key requests. */
  keys: [string, string];
}

/** Account names as the service allows them: 3-24 lowercase letters and digits. */
export const ACCOUNT_NAME = /^[a-z0-9]{3,24}$/;

function newKey(): string {
  return randomBytes(64).toString('base64');
}

/** The account and key every storage SDK expands `UseDevelopmentStorage=true` to (public, documented by the vendor). */
export const DEVELOPMENT_ACCOUNT = 'devstoreaccount1';
export const DEVELOPMENT_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

/**
 * The development account of a data dir made before it carried the development key
 * gets it as key 1; its old key 1 stays valid as key 2.
 */
function withDevelopmentKey(account: StorageAccount): boolean {
  if (account.name !== DEVELOPMENT_ACCOUNT || account.keys.includes(DEVELOPMENT_KEY)) return false;
  account.keys = [DEVELOPMENT_KEY, account.keys[0]];
  return true;
}

export async function loadAccounts(dataDir: string, defaultAccount: string): Promise<StorageAccount[]> {
  const path = join(dataDir, 'storage', 'accounts.json');
  let accounts: StorageAccount[] = [];
  await removeStaleTemporaries(path);
  try {
    accounts = (JSON.parse(await readFile(path, 'utf8')) as { accounts: StorageAccount[] }).accounts;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new StartupError(`cannot read ${path}: ${(err as Error).message}`);
  }
  for (const account of accounts) {
    if (!ACCOUNT_NAME.test(account.name)) throw new StartupError(`${path}: invalid account name "${account.name}" (3-24 lowercase letters and digits)`);
  }
  let changed = false;
  if (!accounts.some((a) => a.name === defaultAccount)) {
    accounts.push({ name: defaultAccount, keys: [newKey(), newKey()] });
    changed = true;
  }
  for (const account of accounts) changed = withDevelopmentKey(account) || changed;
  if (changed) await writeFileAtomic(path, JSON.stringify({ accounts }, null, 2) + '\n', 0o600);
  return accounts;
}
