/**
 * The password hashes an Apache htpasswd file may hold, and checking a
 * password against one. Run in the hash worker (hash-worker.ts): bcrypt and
 * the crypt formats cost milliseconds of CPU each and must not hold the event loop.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import apacheMd5 from 'apache-md5';
import bcrypt from 'bcryptjs';
import { encrypt as shaCrypt } from 'unixcrypt';

// The package's typings declare an ES default export, but it is module.exports = the function.
const aprMd5 = apacheMd5 as unknown as (password: string, salt: string) => string;

export type HashKind = 'bcrypt' | 'apr1' | 'sha1' | 'sha-crypt';

export interface Entry {
  hash: string;
  kind: HashKind;
}

export function hashKind(hash: string): HashKind | null {
  if (/^\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}$/.test(hash)) return 'bcrypt';
  if (hash.startsWith('$apr1$')) return 'apr1';
  if (/^\{SHA\}[A-Za-z0-9+/]{27}=$/.test(hash)) return 'sha1';
  if (/^\$[56]\$/.test(hash)) return 'sha-crypt';
  return null;
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export async function passwordMatches(password: string, entry: Entry): Promise<boolean> {
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
