import { test } from 'node:test';
import assert from 'node:assert/strict';
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
