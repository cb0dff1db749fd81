import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { webcrypto, X509Certificate } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { connect } from 'node:tls';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { Agent, request } from 'undici';
import { ensureLocalCa } from '../../src/common/ca.ts';
import { needsRenewal } from '../../src/scripts/acme.ts';
import { scriptsOptions } from '../../src/scripts/options.ts';
import { startScripts, type RunningScripts } from '../../src/scripts/server.ts';
import { debianProgram, quiet, tempDataDir } from '../helpers/index.ts';
import { writeScript } from './helpers.ts';
import { freePort, startPebble } from './pebble.ts';

const DOMAIN = 'scripts.test';
const dataDir = await tempDataDir({ after });
const folder = join(dataDir, 'served');
await writeScript(folder, 'hello.sh', '#!/bin/sh\necho "hello over tls"\n');
const httpPort = await freePort();
const pebble = await startPebble(dataDir, httpPort);
after(() => pebble.close());
const acmeOptions = {
  ...quiet,
  dataDir,
  scriptsDir: folder,
  acme: DOMAIN,
  acmeDirectory: pebble.directoryUrl,
  acmeCaFile: pebble.wfeCaFile,
  httpPort,
  httpsPort: 0,
};

/** The certificate a TLS server presents for a name (verified against `ca` when given). */
async function presented(port: number, servername = DOMAIN, ca?: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, servername, ...(ca ? { ca } : { rejectUnauthorized: false }) }, () => {
      resolve(new X509Certificate(socket.getPeerX509Certificate()!.raw));
      socket.end();
    });
    socket.once('error', reject);
  });
}

const httpsPortOf = (running: RunningScripts | undefined) => Number(new URL(running!.urls[0]!.url).port);

let server: RunningScripts | undefined;
after(() => server?.close());
test('R-SCRIPT-7 a certificate is obtained from the ACME server (pebble) by HTTP-01 and served over HTTPS', async () => {
  server = await startScripts(acmeOptions);
  assert.match(server.urls[0]!.url, new RegExp(`^https://${DOMAIN.replace('.', '\\.')}:\\d+/$`));
  const port = httpsPortOf(server);
  const root = await pebble.root();
  const rootFile = join(dataDir, 'pebble-root.pem');
  await writeFile(rootFile, root);
  // curl, trusting only pebble's root, must accept the chain for the name.
  const curl = debianProgram('curl', '/usr/bin/curl');
  const { stdout } = await promisify(execFile)(curl, [
    '-sN',
    '--cacert',
    rootFile,
    '--resolve',
    `${DOMAIN}:${port}:127.0.0.1`,
    `https://${DOMAIN}:${port}/hello`,
  ]);
  assert.match(stdout, /^data: hello over tls\n\n/);
  const cert = await presented(port);
  assert.match(cert.issuer, /Pebble Intermediate CA/);
  assert.ok(cert.checkHost(DOMAIN));
  const stored = await readFile(join(dataDir, 'scripts', 'acme', `${DOMAIN}.crt`), 'utf8');
  assert.equal(new X509Certificate(stored).serialNumber, cert.serialNumber);
});

test('R-SCRIPT-8 plain HTTP is redirected (301) to HTTPS, path and query kept', async () => {
  const answer = await request(`http://127.0.0.1:${httpPort}/hello?name=x`, { headers: { host: `${DOMAIN}:${httpPort}` } });
  assert.equal(answer.statusCode, 301);
  assert.equal(answer.headers.location, `https://${DOMAIN}:${httpsPortOf(server)}/hello?name=x`);
  await answer.body.dump();
  const post = await request(`http://127.0.0.1:${httpPort}/resources/create`, { method: 'POST', body: 'x' });
  assert.equal(post.statusCode, 301);
  await post.body.dump();
});

test('R-SCRIPT-8 the ACME challenge path is answered on HTTP, not redirected', async () => {
  const answer = await request(`http://127.0.0.1:${httpPort}/.well-known/acme-challenge/no-such-token`, { headers: { host: DOMAIN } });
  assert.equal(answer.statusCode, 404);
  assert.equal(((await answer.body.json()) as { error: { code: string } }).error.code, 'ScriptNotFound');
});

test('R-SCRIPT-7 the certificate is renewed without a restart, and a restart reuses the stored one', async () => {
  const port = httpsPortOf(server);
  const before = await presented(port);
  const renewed = await server!.renewCertificate();
  const after = await presented(port);
  assert.notEqual(after.serialNumber, before.serialNumber);
  assert.equal(after.serialNumber, new X509Certificate(renewed.cert).serialNumber);
  await server!.close();
  server = await startScripts({ ...acmeOptions, acmeDirectory: 'https://127.0.0.1:1/unreachable' });
  assert.equal((await presented(httpsPortOf(server))).serialNumber, after.serialNumber);
});

/** A self-signed certificate for DOMAIN, 80 days into a 90-day life: due for renewal. */
async function agingCertificate(): Promise<{ cert: string; key: string }> {
  await import('reflect-metadata');
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto as unknown as Crypto);
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as CryptoKeyPair;
  const day = 86_400_000;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '0a0b0c',
    name: `CN=${DOMAIN}`,
    notBefore: new Date(Date.now() - 80 * day),
    notAfter: new Date(Date.now() + 10 * day),
    keys,
    signingAlgorithm: algorithm,
  });
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey as webcrypto.CryptoKey));
  return { cert: cert.toString('pem'), key: `-----BEGIN PRIVATE KEY-----\n${der.toString('base64')}\n-----END PRIVATE KEY-----\n` };
}

test('R-SCRIPT-7 a stored certificate close to expiry is renewed at start-up', async (t) => {
  // pebble validates on the one HTTP port: the server of the tests above gives it up.
  await server?.close();
  server = undefined;
  const aged = await tempDataDir(t);
  const old = await agingCertificate();
  await writeScript(join(aged, 'scripts', 'acme'), `${DOMAIN}.crt`, old.cert, 0o644);
  await writeScript(join(aged, 'scripts', 'acme'), `${DOMAIN}.key`, old.key, 0o600);
  const renewed = await startScripts({ ...acmeOptions, dataDir: aged, httpPort });
  t.after(() => renewed.close());
  const cert = await presented(httpsPortOf(renewed));
  assert.match(cert.issuer, /Pebble Intermediate CA/);
  assert.notEqual(cert.serialNumber, new X509Certificate(old.cert).serialNumber);
});

test('R-SCRIPT-7 --acme with something that is not a DNS name stops start-up before listening', async (t) => {
  for (const bad of ['not a domain', '127.0.0.1', 'x', '-bad.example']) {
    await assert.rejects(startScripts({ ...acmeOptions, dataDir: await tempDataDir(t), acme: bad, httpPort: 0 }), /is not a DNS name/, bad);
  }
});

test('R-SCRIPT-7 renewal is due when a third of the lifetime or 30 days is left', () => {
  const day = 86_400_000;
  const notBefore = new Date(0);
  const ninety = { notBefore, notAfter: new Date(90 * day) };
  assert.equal(needsRenewal(ninety, new Date(59 * day)), false);
  assert.equal(needsRenewal(ninety, new Date(61 * day)), true);
  const sixDays = { notBefore, notAfter: new Date(6 * day) };
  assert.equal(needsRenewal(sixDays, new Date(3 * day)), false);
  assert.equal(needsRenewal(sixDays, new Date(5 * day)), true);
});

test('R-SCRIPT-8 --tls with the local CA serves HTTPS and redirects HTTP', async (t) => {
  const local = await startScripts({ ...quiet, dataDir: await tempDataDir(t), scriptsDir: folder, tls: true, httpPort: 0, httpsPort: 0 });
  t.after(() => local.close());
  const dispatcher = new Agent({ connect: { ca: await readFile(local.caCertPath!, 'utf8') } });
  t.after(() => dispatcher.close());
  const answer = await request(`${local.urls[0]!.url}hello`, { dispatcher });
  assert.match(await answer.body.text(), /^data: hello over tls\n\n/);
  const redirected = await request(`${local.urls[1]!.url}/hello?a=1`);
  assert.equal(redirected.statusCode, 301);
  assert.equal(redirected.headers.location, `${local.urls[0]!.url}hello?a=1`);
  await redirected.body.dump();
});

test('R-SCRIPT-8 --tls-cert/--tls-key files are served, HTTP redirects', async (t) => {
  const ca = await ensureLocalCa(await tempDataDir(t));
  const withFiles = await startScripts({
    ...quiet,
    dataDir: await tempDataDir(t),
    scriptsDir: folder,
    tlsCert: ca.leafPath,
    tlsKey: ca.leafPath,
    httpPort: 0,
    httpsPort: 0,
  });
  t.after(() => withFiles.close());
  const port = Number(new URL(withFiles.urls[0]!.url).port);
  const served = await presented(port, 'localhost', ca.caCert);
  assert.equal(served.serialNumber, new X509Certificate(ca.cert).serialNumber);
  const redirected = await request(`${withFiles.urls[1]!.url}/x`);
  assert.equal(redirected.statusCode, 301);
  await redirected.body.dump();
});

test('R-SCRIPT-9 with TLS the ports default to 80 and 443 (without TLS 8080)', () => {
  assert.equal(scriptsOptions.httpPort.default, 80);
  assert.equal(scriptsOptions.httpsPort.default, 443);
  assert.equal(scriptsOptions.port.default, 8080);
});
