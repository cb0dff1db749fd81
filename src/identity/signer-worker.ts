/** A token signing thread: signs each batch of JWTs it is sent with jose, keeping the keys it has parsed by id. */
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { SignJWT, type JWTHeaderParameters } from 'jose';
import { serveTasks } from '../common/worker-pool.ts';

export interface SignItem {
  kid: string;
  header: JWTHeaderParameters;
  claims: Record<string, unknown>;
}

/** Tokens to sign, and the PKCS#8 PEM of each key they name, by id. */
export interface SignBatch {
  keys: Record<string, string>;
  items: SignItem[];
}

/** Keys kept parsed: the active one and those of recent rotations. */
const KEPT_KEYS = 4;

await serveTasks<SignBatch, string[]>(async () => {
  const parsed = new Map<string, KeyObject>();
  const keyFor = (kid: string, keys: SignBatch['keys']): KeyObject => {
    let key = parsed.get(kid);
    if (!key) {
      key = createPrivateKey(keys[kid]!);
      parsed.set(kid, key);
      // Oldest first in a Map: drop keys long rotated away.
      if (parsed.size > KEPT_KEYS) parsed.delete(parsed.keys().next().value!);
    }
    return key;
  };
  return ({ keys, items }) => Promise.all(items.map(({ kid, header, claims }) => new SignJWT(claims).setProtectedHeader(header).sign(keyFor(kid, keys))));
});
