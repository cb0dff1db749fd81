import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { stat } from 'node:fs/promises';
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
  for (const path of [first.keyPath, first.caCertPath.replace('ca.crt', 'ca.key')]) {
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
  const material = await resolveTls({ tlsCert: ca.certPath, tlsKey: ca.keyPath, dataDir: await tempDataDir(t) });
  assert.equal(material.cert, ca.cert);
  assert.equal(material.caCertPath, null);
  await assert.rejects(resolveTls({ tlsCert: ca.certPath, tlsKey: '', dataDir }), /--tls-cert and --tls-key must be given together/);
  await assert.rejects(resolveTls({ tlsCert: '/nonexistent.pem', tlsKey: ca.keyPath, dataDir }), /cannot read --tls-cert/);
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
  assert.equal((await stat(named.keyPath)).mode & 0o777, 0o600);
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
