/**
 * The local certificate authority, in <data-dir>/ca: the CA (ca.crt, ca.key), made on
 * first start and kept, and the server certificate it issues for the loopback names
 * (localhost.pem: the leaf's certificate and private key in one file). Clients trust
 * the CA file (NODE_EXTRA_CA_CERTS, curl --cacert).
 *
 * The leaf is issued again from the same CA, so clients that trust the CA go on
 * trusting, when it is missing (a CA made elsewhere, ca.crt and ca.key only, as the
 * Testcontainers module copies in), was issued by another CA, has less than 30 days
 * left, or lacks a name asked for (`--tls-names`: the name a Docker host on another
 * machine is reached by, a LAN name or address); the new leaf keeps the old one's
 * names. Its certificate and key change together in one rename, so a process starting
 * while another issues it reads the old pair or the new one, never a mix.
 */
import { webcrypto, X509Certificate } from 'node:crypto';
import { mkdtemp, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join, resolve } from 'node:path';
import { readTextIfPresent, writeFileAtomic } from './files.ts';

/** @peculiar/x509 (and the reflect-metadata it needs) load only when a certificate is issued. */
async function loadX509() {
  await import('reflect-metadata');
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto as unknown as Crypto);
  return x509;
}

/** Names the leaf certificate is valid for. */
export const LEAF_DNS_NAMES = ['localhost', '*.localhost', '*.blob.localhost'];
export const LEAF_IP_ADDRESSES = ['127.0.0.1', '::1'];

export interface LocalCa {
  /** Absolute path of the CA certificate clients should trust. */
  caCertPath: string;
  /** The leaf's certificate and private key in one PEM file (for a program that takes files: name it as both). */
  leafPath: string;
  caCert: string;
  cert: string;
  key: string;
}

const KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;
/** A certificate with less time left than this is made again. */
const RENEW_BEFORE_MS = 30 * DAY_MS;
const CA_CERT = 'ca.crt';
const CA_KEY = 'ca.key';
const LEAF = 'localhost.pem';

async function exportKeyPem(key: CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key as webcrypto.CryptoKey));
  return `-----BEGIN PRIVATE KEY-----\n${der.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END PRIVATE KEY-----\n`;
}

function serialNumber(prefix: string): string {
  return webcrypto.getRandomValues(new Uint8Array(8)).reduce((s, b) => s + b.toString(16).padStart(2, '0'), prefix);
}

/** The first PEM block with this label (`CERTIFICATE`, `PRIVATE KEY`) in `text`, with its last line break. */
function pemBlock(text: string, label: string): string | undefined {
  return new RegExp(`-----BEGIN ${label}-----[^-]+-----END ${label}-----\n?`).exec(text)?.[0];
}

function endsSoon(certificate: X509Certificate, now: number): boolean {
  return Date.parse(certificate.validTo) - now < RENEW_BEFORE_MS;
}

/**
 * Issues a leaf for the loopback names and `names` from the CA (its certificate and
 * private key as PEM) and writes it, certificate and key in one file, in one rename.
 */
async function issueLeaf(dir: string, ca: { cert: string; key: string }, names: readonly string[], now: number): Promise<{ cert: string; key: string }> {
  const x509 = await loadX509();
  const caCert = new x509.X509Certificate(ca.cert);
  const caKey = await webcrypto.subtle.importKey('pkcs8', x509.PemConverter.decodeFirst(ca.key), KEY_ALGORITHM, false, ['sign']);
  const dns = [...new Set([...LEAF_DNS_NAMES, ...names.filter((name) => !isIP(name))])];
  const ips = [...new Set([...LEAF_IP_ADDRESSES, ...names.filter((name) => isIP(name))])];
  const leafKeys = await webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber('02'),
    subject: 'CN=localhost, O=offcloud',
    issuer: caCert.subject,
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + 825 * DAY_MS),
    signingKey: caKey as CryptoKey,
    publicKey: leafKeys.publicKey as CryptoKey,
    signingAlgorithm: KEY_ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
      new x509.SubjectAlternativeNameExtension([
        ...dns.map((value) => ({ type: 'dns' as const, value })),
        ...ips.map((value) => ({ type: 'ip' as const, value })),
      ]),
      await x509.AuthorityKeyIdentifierExtension.create(caCert, false),
    ],
  });
  const issued = { cert: leaf.toString('pem') + '\n', key: await exportKeyPem(leafKeys.privateKey as CryptoKey) };
  await writeFileAtomic(join(dir, LEAF), issued.cert + issued.key, 0o600);
  return issued;
}

/** A new CA and its leaf, made in a temporary folder renamed to `dir` (unless another process made `dir` first). */
async function makeCa(dataDir: string, dir: string, names: readonly string[], now: number): Promise<void> {
  const x509 = await loadX509();
  const caKeys = await webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber('01'),
    name: 'CN=offcloud local CA, O=offcloud',
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + 3650 * DAY_MS),
    keys: caKeys as CryptoKeyPair,
    signingAlgorithm: KEY_ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey as CryptoKey),
    ],
  });
  const ca = { cert: caCert.toString('pem') + '\n', key: await exportKeyPem(caKeys.privateKey as CryptoKey) };
  await mkdir(resolve(dataDir), { recursive: true });
  const temp = await mkdtemp(resolve(dataDir, '.ca-'));
  try {
    await writeFile(join(temp, CA_CERT), ca.cert, { mode: 0o644 });
    await writeFile(join(temp, CA_KEY), ca.key, { mode: 0o600 });
    await issueLeaf(temp, ca, names, now);
    await rename(temp, dir);
  } catch (err) {
    await rm(temp, { recursive: true, force: true });
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
  }
}

/** The names in the leaf's subject alternative names. */
function namesOf(leaf: X509Certificate): string[] {
  // Node prints IPv6 addresses in full (0:0:0:0:0:0:0:1): compressed again, so ::1 is not listed twice.
  return (leaf.subjectAltName ?? '')
    .split(', ')
    .map((entry) => entry.replace(/^(DNS|IP Address):/, ''))
    .map((name) => (isIP(name) === 6 ? new URL(`http://[${name}]/`).hostname.slice(1, -1) : name));
}

/** Whether the leaf is valid for every name (a host name, wildcards honoured, or an IP address). */
function carries(leaf: X509Certificate, names: readonly string[]): boolean {
  return names.every((name) => (isIP(name) ? leaf.checkIP(name) : leaf.checkHost(name)) !== undefined);
}

/** The leaf file's certificate and key, when it holds both. */
function parseLeaf(pem: string | undefined): { cert: string; key: string; certificate: X509Certificate } | undefined {
  const cert = pem && pemBlock(pem, 'CERTIFICATE');
  const key = pem && pemBlock(pem, 'PRIVATE KEY');
  return cert && key ? { cert, key, certificate: new X509Certificate(cert) } : undefined;
}

function issuedBy(leaf: X509Certificate, ca: X509Certificate): boolean {
  return leaf.checkIssued(ca) && leaf.verify(ca.publicKey);
}

/**
 * Returns the data dir's CA, making it on first use (or when it has less than 30 days
 * left), with a leaf valid for the loopback names and `names`, issued again from the
 * same CA when needed (see the top of this file). Processes starting at the same
 * moment agree on one CA: it is made in a temporary folder renamed into place.
 * `now` is the clock the validity periods are read and set by.
 */
export async function ensureLocalCa(dataDir: string, names: readonly string[] = [], now: () => number = Date.now): Promise<LocalCa> {
  const dir = resolve(dataDir, 'ca');
  const caCertPath = join(dir, CA_CERT);
  const leafPath = join(dir, LEAF);
  const caCert = await readTextIfPresent(caCertPath);
  if (caCert === undefined || endsSoon(new X509Certificate(caCert), now())) {
    if (caCert !== undefined) await rm(dir, { recursive: true, force: true });
    await makeCa(dataDir, dir, names, now());
    return ensureLocalCa(dataDir, names, now);
  }
  const authority = new X509Certificate(caCert);
  const leaf = parseLeaf(await readTextIfPresent(leafPath));
  const ours = leaf && issuedBy(leaf.certificate, authority) ? leaf : undefined;
  if (ours && !endsSoon(ours.certificate, now()) && carries(ours.certificate, names)) return { caCertPath, leafPath, caCert, cert: ours.cert, key: ours.key };
  const caKey = await readFile(join(dir, CA_KEY), 'utf8');
  return {
    caCertPath,
    leafPath,
    caCert,
    ...(await issueLeaf(dir, { cert: caCert, key: caKey }, [...(ours ? namesOf(ours.certificate) : []), ...names], now())),
  };
}
