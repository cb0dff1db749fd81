/**
 * The local certificate authority: one CA and one leaf certificate for the
 * loopback names, made on first start in <data-dir>/ca and reused afterwards.
 * Clients trust the CA file (NODE_EXTRA_CA_CERTS, curl --cacert).
 *
 * More names for the leaf (`--tls-names`: the name a Docker host on another
 * machine is reached by, a LAN name or address) are added by issuing the leaf
 * again from the same CA, so clients that trust the CA keep trusting it; the
 * new leaf keeps every name the old one had.
 */
import { webcrypto, X509Certificate } from 'node:crypto';
import { mkdtemp, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join, resolve } from 'node:path';

/** @peculiar/x509 (and the reflect-metadata it needs) load only when a CA is made. */
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
  certPath: string;
  keyPath: string;
  caCert: string;
  cert: string;
  key: string;
}

const KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;

async function exportKeyPem(key: CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key as webcrypto.CryptoKey));
  return `-----BEGIN PRIVATE KEY-----\n${der.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END PRIVATE KEY-----\n`;
}

function serialNumber(prefix: string): string {
  return webcrypto.getRandomValues(new Uint8Array(8)).reduce((s, b) => s + b.toString(16).padStart(2, '0'), prefix);
}

type X509 = Awaited<ReturnType<typeof loadX509>>;

/** A leaf for the loopback names and `names`, signed by the CA; written as localhost.crt/.key in `dir` (key first, each renamed into place). */
async function issueLeaf(x509: X509, dir: string, caCert: InstanceType<X509['X509Certificate']>, caKey: CryptoKey, names: readonly string[]): Promise<void> {
  const now = Date.now();
  const dns = [...new Set([...LEAF_DNS_NAMES, ...names.filter((name) => !isIP(name))])];
  const ips = [...new Set([...LEAF_IP_ADDRESSES, ...names.filter((name) => isIP(name))])];
  const leafKeys = await webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber('02'),
    subject: 'CN=localhost, O=offcloud',
    issuer: caCert.subject,
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + 825 * DAY_MS),
    signingKey: caKey,
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
  for (const [name, text, mode] of [
    ['localhost.key', await exportKeyPem(leafKeys.privateKey as CryptoKey), 0o600],
    ['localhost.crt', leaf.toString('pem') + '\n', 0o644],
  ] as const) {
    await writeFile(join(dir, `${name}.new`), text, { mode });
    await rename(join(dir, `${name}.new`), join(dir, name));
  }
}

async function generateCa(dir: string, names: readonly string[]): Promise<void> {
  const x509 = await loadX509();
  const now = Date.now();
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
  await writeFile(join(dir, 'ca.crt'), caCert.toString('pem') + '\n', { mode: 0o644 });
  await writeFile(join(dir, 'ca.key'), await exportKeyPem(caKeys.privateKey as CryptoKey), { mode: 0o600 });
  await issueLeaf(x509, dir, caCert, caKeys.privateKey as CryptoKey, names);
}

/** The leaf again from the CA in `dir`, with the names the current one has and `names`. */
async function reissueLeaf(dir: string, current: X509Certificate, names: readonly string[]): Promise<void> {
  const x509 = await loadX509();
  const caCert = new x509.X509Certificate(await readFile(join(dir, 'ca.crt'), 'utf8'));
  const der = Buffer.from((await readFile(join(dir, 'ca.key'), 'utf8')).replace(/-----[^-]+-----|\s/g, ''), 'base64');
  const caKey = await webcrypto.subtle.importKey('pkcs8', der, KEY_ALGORITHM, false, ['sign']);
  // Node prints IPv6 addresses in full (0:0:0:0:0:0:0:1): compressed again, so ::1 is not listed twice.
  const had = (current.subjectAltName ?? '')
    .split(', ')
    .map((entry) => entry.replace(/^(DNS|IP Address):/, ''))
    .map((name) => (isIP(name) === 6 ? new URL(`http://[${name}]/`).hostname.slice(1, -1) : name));
  await issueLeaf(x509, dir, caCert, caKey as CryptoKey, [...had, ...names]);
}

/** Whether the leaf is valid for every name (a host name, wildcards honoured, or an IP address). */
function carries(leaf: X509Certificate, names: readonly string[]): boolean {
  return names.every((name) => (isIP(name) ? leaf.checkIP(name) : leaf.checkHost(name)) !== undefined);
}

async function readCa(dir: string): Promise<LocalCa> {
  const caCertPath = join(dir, 'ca.crt');
  const certPath = join(dir, 'localhost.crt');
  const keyPath = join(dir, 'localhost.key');
  const [caCert, cert, key] = await Promise.all([readFile(caCertPath, 'utf8'), readFile(certPath, 'utf8'), readFile(keyPath, 'utf8')]);
  return { caCertPath, certPath, keyPath, caCert, cert, key };
}

function stillValid(ca: LocalCa): boolean {
  const leaf = new X509Certificate(ca.cert);
  return Date.parse(leaf.validTo) - Date.now() > 30 * DAY_MS;
}

/**
 * Returns the data dir's CA, making it on first use, with a leaf valid for the
 * loopback names and `names` (issued again from the same CA when it lacks one).
 * The files are generated in a temporary folder renamed into place, so
 * processes starting at the same moment all end up with one consistent set.
 */
export async function ensureLocalCa(dataDir: string, names: readonly string[] = []): Promise<LocalCa> {
  const dir = resolve(dataDir, 'ca');
  try {
    const existing = await readCa(dir);
    if (stillValid(existing)) {
      const leaf = new X509Certificate(existing.cert);
      if (carries(leaf, names)) return existing;
      await reissueLeaf(dir, leaf, names);
      return await readCa(dir);
    }
    await rm(dir, { recursive: true, force: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(resolve(dataDir), { recursive: true });
  const temp = await mkdtemp(resolve(dataDir, '.ca-'));
  try {
    await generateCa(temp, names);
    await rename(temp, dir);
  } catch (err) {
    await rm(temp, { recursive: true, force: true });
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
    // Another process made it first, perhaps without these names.
    return ensureLocalCa(dataDir, names);
  }
  return readCa(dir);
}
