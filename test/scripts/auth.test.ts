import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { request } from 'undici';
import { parseBasicAuthorization } from '../../src/scripts/htpasswd.ts';
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
