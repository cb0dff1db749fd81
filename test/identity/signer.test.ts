/**
 * The signing threads (R-TOKEN-7): tokens asked for in one turn go to the
 * threads in batches, and each comes back signed with the key it named, in
 * the order asked, also when a rotation puts two keys in one batch.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPublicKey } from 'node:crypto';
import { jwtVerify } from 'jose';
import { openSigningKeys, type SigningKey } from '../../src/identity/keys.ts';
import { TokenSigner } from '../../src/identity/signer.ts';
import { headerOf } from './helpers.ts';

test('R-TOKEN-7 a burst signed in one turn across two keys: every token verifies with the key it names and carries its own claims', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'offcloud-signer-'));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const store = openSigningKeys(dataDir);
  await store.ensure();
  const first = (await store.current()).active;
  await store.rotate();
  const second = (await store.current()).active;
  assert.notEqual(first.kid, second.kid);

  const signer = await TokenSigner.start(2);
  t.after(() => signer.close());
  const keyOf = (i: number): SigningKey => (i % 3 === 0 ? first : second);
  // Eleven at once: uneven batches over two threads, each batch with both keys.
  const tokens = await Promise.all(Array.from({ length: 11 }, (_, i) => signer.sign(keyOf(i), { alg: 'RS256', typ: 'JWT', kid: keyOf(i).kid }, { n: i })));
  for (const [i, token] of tokens.entries()) {
    assert.equal(headerOf(token).kid, keyOf(i).kid);
    const { payload } = await jwtVerify(token, createPublicKey(keyOf(i).privateKey));
    assert.equal(payload.n, i);
  }
  // And one alone, on a later turn.
  const single = await signer.sign(second, { alg: 'RS256', typ: 'JWT', kid: second.kid }, { n: 99 });
  assert.equal((await jwtVerify(single, createPublicKey(second.privateKey))).payload.n, 99);
  // A token signed with one key does not verify with the other.
  await assert.rejects(jwtVerify(tokens[0]!, createPublicKey(second.privateKey)));
});
