import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, X509Certificate } from 'node:crypto';
import { copyFile, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { ensureLocalCa } from '../../src/common/ca.ts';
import { resolveTls } from '../../src/common/tls.ts';
import { createHttpServer, listen } from '../../src/common/http.ts';
import { createLogger } from '../../src/common/log.ts';
import { tempDataDir } from '../helpers/index.ts';

test('local CA: made once in the data dir with private keys 0600, then reused', async (t) => {
  const dataDir = await tempDataDir(t);
  const [first, concurrent] = await Promise.all([ensureLocalCa(dataDir), ensureLocalCa(dataDir)]);
  assert.equal(first.caCert, concurrent.caCert, 'concurrent starts agree on one CA');
  for (const path of [first.leafPath, first.caCertPath.replace('ca.crt', 'ca.key')]) {
    assert.equal((await stat(path)).mode & 0o777, 0o600, path);
  }
  const again = await ensureLocalCa(dataDir);
  assert.equal(again.cert, first.cert);
  assert.equal(again.key, first.key);
});

test('TLS: a server on the local CA is reached by a client trusting only that CA; a client trusting nothing fails', async (t) => {
  const dataDir = await tempDataDir(t);
  const tls = await resolveTls({ tlsCert: '', tlsKey: '', dataDir });
  const app = createHttpServer({ logger: createLogger('silent', 'test'), tls });
  app.get('/hello', async () => 'hi');
  const url = await listen(app, { host: '127.0.0.1', port: 0, component: 'test' });
  t.after(() => app.close());
  assert.match(url, /^https:\/\/127\.0\.0\.1:\d+$/);
  const ca = (await ensureLocalCa(dataDir)).caCert;

  for (const host of ['127.0.0.1', 'localhost']) {
    const trusting = new Agent({ connect: { ca } });
    const response = await request(url.replace('127.0.0.1', host) + '/hello', { dispatcher: trusting });
    assert.equal(await response.body.text(), 'hi');
    await trusting.close();
  }
  const untrusting = new Agent({ connect: { ca: [] } });
  await assert.rejects(request(url + '/health', { dispatcher: untrusting }), /self[- ]signed|unable to (get|verify)|certificate/i);
  await untrusting.close();
  const otherCa = (await ensureLocalCa(await tempDataDir(t))).caCert;
  const wrong = new Agent({ connect: { ca: otherCa } });
  await assert.rejects(request(url + '/health', { dispatcher: wrong }), /certificate|signature/i);
  await wrong.close();
});

test('TLS: --tls-cert and --tls-key files are used as given; one without the other is refused', async (t) => {
  const dataDir = await tempDataDir(t);
  const ca = await ensureLocalCa(dataDir);
  const certPath = join(dataDir, 'server.crt');
  const keyPath = join(dataDir, 'server.key');
  await writeFile(certPath, ca.cert);
  await writeFile(keyPath, ca.key, { mode: 0o600 });
  const material = await resolveTls({ tlsCert: certPath, tlsKey: keyPath, dataDir: await tempDataDir(t) });
  assert.equal(material.cert, ca.cert);
  assert.equal(material.key, ca.key);
  assert.equal(material.caCertPath, null);
  await assert.rejects(resolveTls({ tlsCert: certPath, tlsKey: '', dataDir }), /--tls-cert and --tls-key must be given together/);
  await assert.rejects(resolveTls({ tlsCert: '/nonexistent.pem', tlsKey: keyPath, dataDir }), /cannot read --tls-cert/);
});

test('TLS: --tls-names issues the leaf again from the same CA with the names added (earlier ones kept); a client reaching the server by such a name trusts it', async (t) => {
  const dataDir = await tempDataDir(t);
  const first = await ensureLocalCa(dataDir);
  const leafOf = (ca: { cert: string }) => new X509Certificate(ca.cert);
  assert.equal(leafOf(first).checkHost('docker-host.example'), undefined);

  const named = await ensureLocalCa(dataDir, ['docker-host.example', '10.1.2.3']);
  assert.equal(named.caCert, first.caCert, 'the same CA: clients that trust it go on trusting');
  assert.notEqual(named.cert, first.cert);
  assert.equal(leafOf(named).checkHost('docker-host.example'), 'docker-host.example');
  assert.equal(leafOf(named).checkIP('10.1.2.3'), '10.1.2.3');
  assert.equal(leafOf(named).checkHost('localhost'), 'localhost');
  assert.ok(leafOf(named).verify(new X509Certificate(first.caCert).publicKey));
  assert.equal((await stat(named.leafPath)).mode & 0o777, 0o600);
  // Asked again with the same names: kept as is. With another: both carried.
  assert.equal((await ensureLocalCa(dataDir, ['docker-host.example'])).cert, named.cert);
  const more = await ensureLocalCa(dataDir, ['ci-runner.internal']);
  assert.equal(leafOf(more).checkHost('ci-runner.internal'), 'ci-runner.internal');
  assert.equal(leafOf(more).checkHost('docker-host.example'), 'docker-host.example');
  assert.equal(leafOf(more).subjectAltName!.match(/IP Address:0:0:0:0:0:0:0:1/g)!.length, 1, leafOf(more).subjectAltName);

  // A server started with the option presents the new leaf; the client checks the name it connects by.
  const tls = await resolveTls({ tlsCert: '', tlsKey: '', dataDir, tlsNames: ['remote-docker.example'] });
  const app = createHttpServer({ logger: createLogger('silent', 'test'), tls });
  app.get('/hello', async () => 'hi');
  const url = await listen(app, { host: '127.0.0.1', port: 0, component: 'test' });
  t.after(() => app.close());
  for (const [servername, works] of [
    ['remote-docker.example', true],
    ['not-named.example', false],
  ] as const) {
    const agent = new Agent({ connect: { ca: first.caCert, servername } });
    const answer = request(`${url}/hello`, { dispatcher: agent });
    if (works) assert.equal(await (await answer).body.text(), 'hi');
    else await assert.rejects(answer, /altnames|does not match/i);
    await agent.close();
  }
});

/** Whether the private key is the one whose public key the certificate carries. */
function samePair({ cert, key }: { cert: string; key: string }): boolean {
  const spki = { type: 'spki', format: 'der' } as const;
  return createPublicKey(key).export(spki).equals(new X509Certificate(cert).publicKey.export(spki));
}

test('local CA: a leaf with under 30 days left is issued again from the same CA, its names kept (clock injected)', async (t) => {
  const dataDir = await tempDataDir(t);
  const first = await ensureLocalCa(dataDir, ['build-host.example']);
  const leafOf = (ca: { cert: string }) => new X509Certificate(ca.cert);
  const ends = Date.parse(leafOf(first).validTo);

  const weeksBefore = await ensureLocalCa(dataDir, [], () => ends - 40 * 86_400_000);
  assert.equal(weeksBefore.cert, first.cert, 'over 30 days left: kept');
  const daysBefore = await ensureLocalCa(dataDir, [], () => ends - 10 * 86_400_000);
  assert.equal(daysBefore.caCert, first.caCert, 'the CA is kept: clients that trust it go on trusting');
  assert.notEqual(leafOf(daysBefore).serialNumber, leafOf(first).serialNumber);
  assert.ok(Date.parse(leafOf(daysBefore).validTo) > ends, 'the new leaf runs past the old one');
  assert.ok(leafOf(daysBefore).verify(new X509Certificate(first.caCert).publicKey));
  assert.equal(leafOf(daysBefore).checkHost('build-host.example'), 'build-host.example');
  assert.ok(samePair(daysBefore));
  // What the next process reads is that new leaf.
  assert.equal((await ensureLocalCa(dataDir, [], () => ends - 10 * 86_400_000)).cert, daysBefore.cert);
});

test('local CA: made elsewhere (ca.crt and ca.key only): kept, and a leaf issued from it; a leaf of another CA is replaced', async (t) => {
  const made = await ensureLocalCa(await tempDataDir(t));
  const dataDir = await tempDataDir(t);
  await mkdir(join(dataDir, 'ca'), { recursive: true });
  for (const file of ['ca.crt', 'ca.key']) await copyFile(join(made.caCertPath, '..', file), join(dataDir, 'ca', file));

  const brought = await ensureLocalCa(dataDir);
  assert.equal(brought.caCert, made.caCert);
  assert.notEqual(brought.cert, made.cert);
  assert.ok(new X509Certificate(brought.cert).verify(new X509Certificate(made.caCert).publicKey));
  assert.ok(samePair(brought));

  // A leaf file left from another CA (its folder's CA was replaced by hand).
  const other = await ensureLocalCa(await tempDataDir(t));
  await copyFile(other.leafPath, brought.leafPath);
  const replaced = await ensureLocalCa(dataDir);
  assert.equal(replaced.caCert, made.caCert);
  assert.ok(new X509Certificate(replaced.cert).verify(new X509Certificate(made.caCert).publicKey));
  assert.equal(await readFile(replaced.leafPath, 'utf8'), replaced.cert + replaced.key);
});

test('local CA: while the leaf is issued again, a process reading it gets a key and its own certificate, never a mix', async (t) => {
  const dataDir = await tempDataDir(t);
  await ensureLocalCa(dataDir);
  let issuing = true;
  const issues = (async () => {
    for (let i = 0; i < 10; i++) await ensureLocalCa(dataDir, [`host-${i}.example`]);
    issuing = false;
  })();
  const seen: { cert: string; key: string }[] = [];
  const reader = async () => {
    while (issuing) seen.push(await ensureLocalCa(dataDir));
  };
  await Promise.all([issues, reader(), reader(), reader()]);
  assert.ok(new Set(seen.map(({ cert }) => cert)).size > 1, 'the readers saw the leaf change');
  for (const pair of seen) assert.ok(samePair(pair), "a key with another leaf's certificate");
});
