/**
 * certificates and snis: the HTTPS listener answers each TLS handshake with
 * the certificate of the server name the client asks for, in Kong's order
 * (exact, prefix wildcard, suffix wildcard, `*`, the gateway's own), checked
 * with real TLS clients (node's tls and https, curl) that send that name.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { get } from 'node:https';
import { join } from 'node:path';
import { test } from 'node:test';
import { connect, type ConnectionOptions } from 'node:tls';
import { request } from 'undici';
import { debianProgram, tempDataDir } from '../helpers/index.ts';
import { echoBackend, errorsOf, gatewayWith, selfSignedCertificate } from './helpers.ts';

/** The certificate the gateway's HTTPS port shows a client sending `servername` (none when undefined). */
function servedCertificate(httpsUrl: string, servername?: string, extra: ConnectionOptions = {}): Promise<X509Certificate> {
  const { port } = new URL(httpsUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: Number(port), servername, rejectUnauthorized: false, ...extra }, () => {
      const certificate = socket.getPeerX509Certificate()!;
      socket.end();
      resolve(certificate);
    });
    socket.on('error', reject);
  });
}

const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;

/** A GET through the HTTPS port by name, trusting only `ca`: the handshake must verify for that name. */
function httpsGet(httpsUrl: string, servername: string, ca: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = get({ host: '127.0.0.1', port: Number(new URL(httpsUrl).port), servername, ca, path, headers: { host: servername } }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
  });
}

test('certificates/snis: exact, prefix wildcard, suffix wildcard, `*`, else the gateway’s own; real clients verify the chosen one', async (t) => {
  const [api, shop, internal, fallback] = await Promise.all([
    selfSignedCertificate(t, ['api.example.com']),
    selfSignedCertificate(t, ['*.shop.example.com'], 'rsa'),
    selfSignedCertificate(t, ['internal.corp']),
    selfSignedCertificate(t, ['default.example.com']),
  ]);
  const backend = await echoBackend(t);
  const fallbackId = '3f0c2b1a-5d4e-4c6b-8a79-0e1f2a3b4c5d';
  const gw = await gatewayWith(t, {
    _format_version: '3.0',
    certificates: [
      { ...api, snis: [{ name: 'api.example.com' }] },
      { ...shop, snis: [{ name: '*.shop.example.com' }] },
      { ...internal, tags: ['ops'], snis: [{ name: 'internal.*' }] },
      { id: fallbackId, ...fallback },
    ],
    snis: [{ name: '*', certificate: { id: fallbackId } }],
    services: [{ name: 's', url: backend.url, routes: [{ paths: ['/'] }] }],
  });
  const cases: [string | undefined, string | null][] = [
    ['api.example.com', api.cert],
    ['API.Example.COM', api.cert],
    ['www.shop.example.com', shop.cert],
    ['a.b.shop.example.com', fallback.cert], // a wildcard stands for one label only
    ['internal.corp', internal.cert],
    ['internal.lan', internal.cert],
    ['other.test', fallback.cert],
    [undefined, null], // no name sent: the gateway's own
  ];
  for (const [name, expected] of cases) {
    const served = await servedCertificate(gw.https, name);
    if (expected === null) assert.match(served.issuer, /offcloud local CA/, String(name));
    else assert.equal(served.fingerprint256, fingerprint(expected), String(name));
  }

  const viaNode = await httpsGet(gw.https, 'api.example.com', api.cert, '/hello');
  assert.deepEqual([viaNode.status, JSON.parse(viaNode.body).url], [200, '/hello']);
  const caFile = join(await tempDataDir(t), 'shop.pem');
  await writeFile(caFile, shop.cert);
  const port = new URL(gw.https).port;
  const curlArgs = ['-sS', '--resolve', `www.shop.example.com:${port}:127.0.0.1`, '--cacert', caFile, `https://www.shop.example.com:${port}/curl`];
  const viaCurl = await new Promise<string>((resolve, reject) =>
    execFile(debianProgram('curl', '/usr/bin/curl'), curlArgs, (err, stdout) => (err ? reject(err) : resolve(stdout))),
  );
  assert.equal(JSON.parse(viaCurl).url, '/curl');
  // The wrong certificate for a name fails the client's own check.
  await assert.rejects(httpsGet(gw.https, 'api.example.com', shop.cert, '/'), /self[- ]signed|unable to verify|certificate/i);

  const listed = await request(`${gw.admin}/certificates/${fallbackId}/snis`);
  assert.deepEqual(
    ((await listed.body.json()) as { data: { name: string }[] }).data.map((s) => s.name),
    ['*'],
  );
});

test('certificates: cert_alt/key_alt give an RSA and an ECDSA certificate for one name, each client getting the one it can use', async (t) => {
  const [ec, rsa] = await Promise.all([selfSignedCertificate(t, ['dual.example.com'], 'ec'), selfSignedCertificate(t, ['dual.example.com'], 'rsa')]);
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, {
    _format_version: '3.0',
    certificates: [{ cert: rsa.cert, key: rsa.key, cert_alt: ec.cert, key_alt: ec.key, snis: [{ name: 'dual.example.com' }] }],
    services: [{ name: 's', url: backend.url, routes: [{ paths: ['/'] }] }],
  });
  const tls12 = { maxVersion: 'TLSv1.2' } as const;
  const forEcdsa = await servedCertificate(gw.https, 'dual.example.com', { ...tls12, ciphers: 'ECDHE-ECDSA-AES128-GCM-SHA256' });
  const forRsa = await servedCertificate(gw.https, 'dual.example.com', { ...tls12, ciphers: 'ECDHE-RSA-AES128-GCM-SHA256' });
  assert.equal(forEcdsa.fingerprint256, fingerprint(ec.cert));
  assert.equal(forRsa.fingerprint256, fingerprint(rsa.cert));
});

test('certificates: with --workers 2, each worker serves the certificate for the name, and a POST /config reload changes it', async (t) => {
  const [first, second] = await Promise.all([selfSignedCertificate(t, ['swap.example.com']), selfSignedCertificate(t, ['swap.example.com'])]);
  const backend = await echoBackend(t);
  const doc = (pair: { cert: string; key: string }) => ({
    _format_version: '3.0',
    certificates: [{ ...pair, snis: [{ name: 'swap.example.com' }] }],
    services: [{ name: 's', url: backend.url, routes: [{ paths: ['/'] }] }],
  });
  const gw = await gatewayWith(t, doc(first), { workers: 2 });
  for (let i = 0; i < 4; i++) assert.equal((await servedCertificate(gw.https, 'swap.example.com')).fingerprint256, fingerprint(first.cert));
  const reload = await request(`${gw.admin}/config`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(doc(second)) });
  assert.equal(reload.statusCode, 201);
  await reload.body.dump();
  for (let i = 0; i < 4; i++) assert.equal((await servedCertificate(gw.https, 'swap.example.com')).fingerprint256, fingerprint(second.cert));
});

test('certificates/snis: Kong’s checks and messages; odd server names get a certificate and the listener keeps serving', async (t) => {
  const [one, other, rsa] = await Promise.all([
    selfSignedCertificate(t, ['one.example.com']),
    selfSignedCertificate(t, ['other.example.com']),
    selfSignedCertificate(t, ['rsa.example.com'], 'rsa'),
  ]);
  const doc = (rest: Record<string, unknown>) => ({ _format_version: '3.0', ...rest });
  assert.deepEqual(errorsOf(doc({ certificates: [{ cert: one.cert }] })), ['certificates[0].key: required field missing']);
  const [badCert] = errorsOf(doc({ certificates: [{ cert: 'not a certificate', key: one.key }] }));
  assert.match(badCert!, /^certificates\[0\]\.cert: invalid certificate: /);
  const [badKey] = errorsOf(doc({ certificates: [{ cert: one.cert, key: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n' }] }));
  assert.match(badKey!, /^certificates\[0\]\.key: invalid key: /);
  assert.deepEqual(errorsOf(doc({ certificates: [{ cert: one.cert, key: other.key }] })), ['certificates[0]: cert: certificate does not match key']);
  assert.deepEqual(errorsOf(doc({ certificates: [{ ...one, cert_alt: rsa.cert }] })), [
    "certificates[0]: all or none of these fields must be set: 'cert_alt', 'key_alt'",
  ]);
  assert.deepEqual(errorsOf(doc({ certificates: [{ ...one, cert_alt: other.cert, key_alt: other.key }] })), [
    'certificates[0]: certificate and alternative certificate need to have different type (e.g. RSA and ECDSA), the provided certificates were both of the same type',
  ]);
  assert.deepEqual(
    errorsOf(
      doc({
        certificates: [
          {
            ...one,
            snis: [{ name: 'a.*.example.com' }, { name: '*.*.example.com' }, { name: 'a.example.com:443' }, { name: 'x y' }, { name: 'dup.example.com' }],
          },
        ],
        snis: [{ name: 'DUP.example.com', certificate: 'nope' }, { name: 'z.example.com' }],
      }),
    ),
    [
      'certificates[0].snis[0].name: invalid wildcard: must be placed at leftmost or rightmost label',
      'certificates[0].snis[1].name: only one wildcard must be specified',
      'certificates[0].snis[2].name: must not have a port',
      'certificates[0].snis[3].name: invalid hostname',
      "snis[0].certificate: references a certificate that does not exist: 'nope'",
      'snis[1].certificate: required field missing',
      "snis[0].name: uniqueness violation: 'dup.example.com' is also used by certificates[0].snis[4]",
    ],
  );

  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, {
    _format_version: '3.0',
    certificates: [{ ...one, snis: [{ name: 'one.example.com' }] }],
    services: [{ name: 's', url: backend.url, routes: [{ paths: ['/'] }] }],
  });
  for (const name of ['x'.repeat(250), 'one.example.com.', '..', 'ümlaut.example.com', '*']) {
    const served = await servedCertificate(gw.https, name);
    assert.ok(served.fingerprint256.length > 0, name);
  }
  assert.equal((await servedCertificate(gw.https, 'one.example.com')).fingerprint256, fingerprint(one.cert));
  assert.equal((await httpsGet(gw.https, 'one.example.com', one.cert, '/still')).status, 200);
});
