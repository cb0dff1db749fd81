/** Client secrets (stored salted and hashed, shown once) and client certificates. */
import { createHash, randomBytes, timingSafeEqual, X509Certificate } from 'node:crypto';
import { ConfigError } from '../../common/errors.ts';
import { type ClientApplication, type ClientCertificate, type ClientSecret, newId } from './model.ts';

/** Default lifetime of a new secret, as the portal's recommended 180 days. */
export const DEFAULT_SECRET_DAYS = 180;

function hashSecret(salt: string, value: string): string {
  return createHash('sha256').update(salt).update(value, 'utf8').digest('hex');
}

/**
 * Makes a secret: the value (shown once) and the stored record. Values are 40
 * random characters, so a salted SHA-256 is as strong as a slow KDF here and
 * keeps the token endpoint fast.
 */
export function createClientSecret(days = DEFAULT_SECRET_DAYS, now = new Date()): { value: string; record: ClientSecret } {
  const value = randomBytes(30).toString('base64url');
  return { value, record: secretRecord(value, new Date(now.getTime() + days * 86_400_000), now) };
}

/** A secret's stored form: salted hash, a hint and the expiry; the value itself is never kept. */
export function secretRecord(value: string, expiresAt: Date, now: Date): ClientSecret {
  const salt = randomBytes(16).toString('hex');
  return {
    keyId: newId(),
    hint: value.slice(0, 3),
    salt,
    hash: hashSecret(salt, value),
    createdAt: now.toISOString(),
    expiresAt: expiresAt.toISOString(),
  };
}

/** Reads a PEM certificate into the record a client keeps; `where` names it in errors. */
export function clientCertificate(pem: string, where: string): ClientCertificate {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(pem);
  } catch (err) {
    throw new ConfigError(`${where} is not a PEM certificate: ${(err as Error).message}`);
  }
  const der = certificate.raw;
  return {
    keyId: createHash('sha256')
      .update(der)
      .digest('hex')
      .slice(0, 32)
      .replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-'),
    thumbprint: createHash('sha1').update(der).digest('base64url'),
    thumbprintSha256: createHash('sha256').update(der).digest('base64url'),
    certificate: certificate.toString(),
    expiresAt: new Date(certificate.validTo).toISOString(),
  };
}

export type SecretCheck = { ok: true; secret: ClientSecret } | { ok: false; reason: 'invalid' | 'expired' };

/** Compares a presented secret with every stored one in constant time. */
export function checkClientSecret(client: ClientApplication, value: string, now = new Date()): SecretCheck {
  let expiredMatch = false;
  for (const secret of client.secrets) {
    const expected = Buffer.from(secret.hash, 'hex');
    const given = Buffer.from(hashSecret(secret.salt, value), 'hex');
    if (expected.length === given.length && timingSafeEqual(expected, given)) {
      if (Date.parse(secret.expiresAt) > now.getTime()) return { ok: true, secret };
      expiredMatch = true;
    }
  }
  return { ok: false, reason: expiredMatch ? 'expired' : 'invalid' };
}
