import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { request } from 'undici';
import pino from 'pino';
import type { Entry } from '../../src/scripts/hashes.ts';
import { HashVerifier, parseBasicAuthorization, PasswordFile } from '../../src/scripts/htpasswd.ts';
import { startScripts } from '../../src/scripts/server.ts';
import { debianProgram, quiet, tempDataDir } from '../helpers/index.ts';
import { callStream, dataLines, startHarness } from './helpers.ts';

const htpasswd = debianProgram('apache2-utils', '/usr/bin/htpasswd');
const dir = await tempDataDir({ after });
const passwordFile = join(dir, 'users.htpasswd');

/** htpasswd flag per format: bcrypt, apr1, {SHA}, SHA-256 crypt, SHA-512 crypt. */
const FORMATS = { bcrypt: '-B', apr1: '-m', sha1: '-s', sha256crypt: '-2', sha512crypt: '-5' } as const;
execFileSync(htpasswd, ['-c', '-b', '-B', passwordFile, 'bootstrap', 'x']);
for (const [user, flag] of Object.entries(FORMATS)) execFileSync(htpasswd, ['-b', flag, passwordFile, user, `pw-${user}`]);

const h = await startHarness({ after }, { htpasswd: passwordFile, realm: 'test realm' });
await h.script('whoami.sh', '#!/bin/sh\necho "user=$REMOTE_USER"\n');

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

async function expect401(headers: Record<string, string>) {
  const answer = await request(`${h.base}/whoami`, { headers });
  assert.equal(answer.statusCode, 401);
  assert.equal(answer.headers['www-authenticate'], 'Basic realm="test realm", charset="UTF-8"');
  const body = (await answer.body.json()) as { error: { code: string } };
  assert.equal(body.error.code, 'Unauthorized');
}

for (const [user, flag] of Object.entries(FORMATS)) {
  test(`R-SCRIPT-6 a user written by Debian's htpasswd ${flag} (${user}) is let in and named to the script`, async () => {
    const answer = await callStream(`${h.base}/whoami`, { headers: { authorization: basic(user, `pw-${user}`) } });
    assert.equal(answer.status, 200);
    assert.deepEqual(dataLines(answer), [`user=${user}`]);
    await expect401({ authorization: basic(user, 'wrong') });
  });
}

test('R-SCRIPT-6 no header, unknown user, broken header → 401 with WWW-Authenticate: Basic', async () => {
  await expect401({});
  await expect401({ authorization: basic('nobody', 'pw-bcrypt') });
  await expect401({ authorization: 'Basic !!!not-base64' });
  await expect401({ authorization: 'Bearer abc' });
  await expect401({ authorization: `Basic ${Buffer.from('no-colon').toString('base64')}` });
});

test('R-SCRIPT-6 the index needs authentication too; /health does not', async () => {
  await expect401({});
  const index = await request(`${h.base}/`);
  assert.equal(index.statusCode, 401);
  await index.body.dump();
  const health = await request(`${h.base}/health`);
  assert.equal(health.statusCode, 200);
  await health.body.dump();
});

test('R-SCRIPT-6 the password file is re-read when it changes', async () => {
  execFileSync(htpasswd, ['-b', '-B', passwordFile, 'newcomer', 'fresh']);
  const answer = await callStream(`${h.base}/whoami`, { headers: { authorization: basic('newcomer', 'fresh') } });
  assert.deepEqual(dataLines(answer), ['user=newcomer']);
  execFileSync(htpasswd, ['-D', passwordFile, 'newcomer']);
  await expect401({ authorization: basic('newcomer', 'fresh') });
});

test('R-SCRIPT-6 a password file with an unsupported line stops start-up naming the line', async (t) => {
  const dataDir = await tempDataDir(t);
  const file = join(dataDir, 'des.htpasswd');
  execFileSync(htpasswd, ['-c', '-b', '-B', file, 'fine', 'x']);
  execFileSync(htpasswd, ['-b', '-d', file, 'old', 'x']);
  await assert.rejects(startScripts({ ...quiet, dataDir, htpasswd: file }), /des\.htpasswd:2: user "old": DES crypt/);
  await writeFile(file, 'plain:secret\n');
  await assert.rejects(startScripts({ ...quiet, dataDir, htpasswd: file }), /des\.htpasswd:1: user "plain": .*plain text is refused/);
  await assert.rejects(startScripts({ ...quiet, dataDir, htpasswd: join(dataDir, 'missing') }), /cannot read --htpasswd/);
});

test('R-SCRIPT-6 Basic credentials parse with a colon inside the password', () => {
  assert.deepEqual(parseBasicAuthorization(basic('u', 'a:b:c')), { user: 'u', password: 'a:b:c' });
  assert.equal(parseBasicAuthorization('Basic'), null);
});

/** The real verifier, noting which hashes it was asked to check against. */
class NotingVerifier extends HashVerifier {
  readonly checked: string[] = [];

  override verify(password: string, entry: Entry): Promise<boolean> {
    this.checked.push(entry.hash);
    return super.verify(password, entry);
  }
}

test('R-SCRIPT-6 an unknown user costs what a user of the file costs: the password is checked against one of its own hashes', async (t) => {
  const verifier = new NotingVerifier();
  const file = await PasswordFile.load(passwordFile, pino({ level: 'silent' }), verifier);
  t.after(() => file.close());
  const fileHashes = readFileSync(passwordFile, 'utf8')
    .trim()
    .split('\n')
    .map((line) => line.slice(line.indexOf(':') + 1));
  assert.equal(await file.authenticate(basic('bcrypt', 'wrong')), null);
  assert.deepEqual(verifier.checked, [fileHashes[1]], 'a known user: their own hash');
  for (const name of ['nobody', 'admin', 'root']) {
    verifier.checked.length = 0;
    assert.equal(await file.authenticate(basic(name, 'pw-bcrypt')), null);
    assert.equal(await file.authenticate(basic(name, 'other')), null);
    assert.equal(verifier.checked.length, 2, `${name}: one check per attempt, as for a real user`);
    assert.ok(fileHashes.includes(verifier.checked[0]!), `${name}: checked against a hash of the file`);
    assert.equal(verifier.checked[1], verifier.checked[0], `${name}: the same stand-in every time`);
  }
});

test('R-SCRIPT-6 password checks run off the event loop: /health keeps answering while wrong bcrypt passwords are checked', async (t) => {
  const dataDir = await tempDataDir(t);
  const file = join(dataDir, 'costly.htpasswd');
  execFileSync(htpasswd, ['-c', '-b', '-B', '-C', '11', file, 'costly', 'right']);
  const costly = await startHarness(t, { htpasswd: file });
  await costly.script('hello.sh', '#!/bin/sh\necho hello\n');
  let wrongAnswered = 0;
  const wrong = Array.from({ length: 8 }, async () => {
    const answer = await request(`${costly.base}/hello`, { headers: { authorization: basic('costly', `wrong`) } });
    await answer.body.dump();
    assert.equal(answer.statusCode, 401);
    wrongAnswered++;
  });
  // Sequential probes while the checks run: with hashing on the event loop, each waits for bcrypt work in between.
  let probesBeforeLastCheck = 0;
  while (wrongAnswered < wrong.length) {
    const health = await request(`${costly.base}/health`);
    await health.body.dump();
    assert.equal(health.statusCode, 200);
    if (wrongAnswered < wrong.length) probesBeforeLastCheck++;
  }
  await Promise.all(wrong);
  assert.ok(probesBeforeLastCheck >= 10, `/health answered ${probesBeforeLastCheck} times while 8 bcrypt checks ran`);
});
