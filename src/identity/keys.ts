/**
 * Token signing keys: RSA 2048 keys, each with a self-signed certificate so
 * that JWKS entries carry `kid`, `x5t` and `x5c` as the real issuer's do.
 * Kept in <data-dir>/identity/signing-keys.json (0600). Rotation adds a key
 * that signs from then on; the previous ones stay published until every token
 * they signed has expired.
 */
import { createHash, createPrivateKey, createPublicKey, webcrypto, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { JSONWebKeySet, JWK } from 'jose';
import { createFileExclusive, withFileLock, writeFileAtomic } from '../common/files.ts';
import { FollowedFile } from './followed-file.ts';

/** Longest token lifetime this issuer hands out; a retired key stays published this long (plus skew). */
export const MAX_TOKEN_LIFETIME_SECONDS = 86_400;
const RETIRED_KEY_GRACE_MS = (MAX_TOKEN_LIFETIME_SECONDS + 600) * 1000;

interface StoredKey {
  kid: string;
  createdAt: string;
  /** When a newer key took over signing; null for the active key. */
  retiredAt: string | null;
  privateKey: string;
  certificate: string;
}

interface StoredKeyFile {
  keys: StoredKey[];
}

export interface SigningKey {
  /** Also the `x5t`: base64url SHA-1 thumbprint of the certificate, as the real issuer. */
  kid: string;
  privateKey: KeyObject;
  /** The same key, PKCS#8 PEM: what the signing threads are sent (src/identity/signer.ts). */
  privateKeyPem: string;
  /** Public JWK with `use`, `kid`, `x5t` and `x5c`. */
  jwk: JWK;
  createdAt: string;
  retiredAt: string | null;
}

export interface SigningKeySet {
  /** The key new tokens are signed with. */
  active: SigningKey;
  /** The JWKS document: the active key first, then retired keys still in their grace period. */
  jwks: JSONWebKeySet;
}

const RSA = {
  name: 'RSASSA-PKCS1-v1_5',
  hash: 'SHA-256',
  modulusLength: 2048,
  publicExponent: new Uint8Array([1, 0, 1]),
} as const;

function pem(label: string, der: Buffer): string {
  return `-----BEGIN ${label}-----\n${der.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END ${label}-----\n`;
}

export interface SelfSignedKey {
  privateKeyPem: string;
  certificatePem: string;
  /** The certificate, DER. */
  der: Buffer;
}

/**
 * An RSA 2048 key pair and a self-signed certificate for it (valid two years):
 * the issuer's signing keys, and a client's assertion certificate in tests.
 */
export async function createSelfSignedKey(subject: string, now = new Date()): Promise<SelfSignedKey> {
  await import('reflect-metadata');
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto as unknown as Crypto);
  const keys = (await webcrypto.subtle.generateKey(RSA, true, ['sign', 'verify'])) as CryptoKeyPair;
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(8)))
      .toString('hex')
      .replace(/^./, '1'),
    name: `CN=${subject}`,
    notBefore: new Date(now.getTime() - 3_600_000),
    notAfter: new Date(now.getTime() + 2 * 365 * 86_400_000),
    keys,
    signingAlgorithm: RSA,
  });
  const der = Buffer.from(certificate.rawData);
  const privateDer = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey as webcrypto.CryptoKey));
  return { privateKeyPem: pem('PRIVATE KEY', privateDer), certificatePem: pem('CERTIFICATE', der), der };
}

async function generateStoredKey(now: Date): Promise<StoredKey> {
  const made = await createSelfSignedKey('offcloud token signing', now);
  return {
    kid: createHash('sha1').update(made.der).digest('base64url'),
    createdAt: now.toISOString(),
    retiredAt: null,
    privateKey: made.privateKeyPem,
    certificate: made.certificatePem,
  };
}

function toSigningKey(stored: StoredKey): SigningKey {
  const privateKey = createPrivateKey(stored.privateKey);
  const der = Buffer.from(stored.certificate.replace(/-----[^-]+-----|\s/g, ''), 'base64');
  const { n, e } = createPublicKey(privateKey).export({ format: 'jwk' });
  return {
    kid: stored.kid,
    privateKey,
    privateKeyPem: stored.privateKey,
    jwk: { kty: 'RSA', use: 'sig', kid: stored.kid, x5t: stored.kid, n, e, x5c: [der.toString('base64')] },
    createdAt: stored.createdAt,
    retiredAt: stored.retiredAt,
  };
}

function stillPublished(key: StoredKey, now: number): boolean {
  return key.retiredAt === null || Date.parse(key.retiredAt) + RETIRED_KEY_GRACE_MS > now;
}

function parseKeyFile(path: string, content: string): SigningKeySet {
  const file = JSON.parse(content) as StoredKeyFile;
  const now = Date.now();
  const keys = file.keys.filter((k) => stillPublished(k, now)).map(toSigningKey);
  const active = keys.find((k) => k.retiredAt === null);
  if (!active) throw new Error(`${path} holds no active signing key; run \`offcloud identity keys rotate\``);
  return { active, jwks: { keys: [active, ...keys.filter((k) => k !== active)].map((k) => k.jwk) } };
}

/** The signing keys of a data dir; the servers call `current()` per request and follow rotations. */
export class SigningKeyStore {
  private readonly file: FollowedFile<SigningKeySet>;

  constructor(readonly path: string) {
    this.file = new FollowedFile(path, (content) => parseKeyFile(path, content));
  }

  /** Makes the first key if there is none; true when this call made it. */
  async ensure(): Promise<boolean> {
    if (await this.file.exists()) return false;
    const file: StoredKeyFile = { keys: [await generateStoredKey(new Date())] };
    return createFileExclusive(this.path, `${JSON.stringify(file, null, 2)}\n`, 0o600);
  }

  current(): Promise<SigningKeySet> {
    return this.file.current();
  }

  /**
   * Adds a new key that signs from now on; the previous active key is marked
   * retired and stays published for the longest token lifetime; keys past
   * that are dropped. Returns the new key id.
   */
  async rotate(now = new Date()): Promise<{ kid: string; retired: string[] }> {
    const fresh = await generateStoredKey(now);
    // Under the file's lock, so two rotations at once both publish their key.
    return withFileLock(this.path, async () => {
      const file = JSON.parse(await readFile(this.path, 'utf8')) as StoredKeyFile;
      const retired: string[] = [];
      for (const key of file.keys) {
        if (key.retiredAt === null) {
          key.retiredAt = now.toISOString();
          retired.push(key.kid);
        }
      }
      file.keys = [fresh, ...file.keys.filter((k) => stillPublished(k, now.getTime()))];
      await writeFileAtomic(this.path, `${JSON.stringify(file, null, 2)}\n`, 0o600);
      return { kid: fresh.kid, retired };
    });
  }
}

export function openSigningKeys(dataDir: string): SigningKeyStore {
  return new SigningKeyStore(resolve(dataDir, 'identity', 'signing-keys.json'));
}
