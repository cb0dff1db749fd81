/** A token signing thread: signs each JWT it is sent with jose, keeping the keys it has parsed by id. */
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { SignJWT, type JWTHeaderParameters } from 'jose';
import { serveTasks } from '../common/worker-pool.ts';

export interface SignTask {
  kid: string;
  privateKeyPem: string;
  header: JWTHeaderParameters;
  claims: Record<string, unknown>;
}

/** Keys kept parsed: the active one and those of recent rotations. */
const KEPT_KEYS = 4;

await serveTasks<SignTask, string>(async () => {
  const keys = new Map<string, KeyObject>();
  const keyFor = (kid: string, pem: string): KeyObject => {
    let key = keys.get(kid);
    if (!key) {
      key = createPrivateKey(pem);
      keys.set(kid, key);
      // Oldest first in a Map: drop keys long rotated away.
      if (keys.size > KEPT_KEYS) keys.delete(keys.keys().next().value!);
    }
    return key;
  };
  return ({ kid, privateKeyPem, header, claims }) => new SignJWT(claims).setProtectedHeader(header).sign(keyFor(kid, privateKeyPem));
});
