/**
 * Kong's checks on a certificate entity: `cert` and `key` must be PEM that
 * parses and belong together; `cert_alt`/`key_alt`, when given, the same,
 * both or neither, and of the other key type (an RSA pair beside an ECDSA
 * one), so a handshake can offer the one the client prefers.
 */
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import type { Certificate } from './model.ts';
import { join, type FieldError } from './schema.ts';

/** The pair's certificate, or the message Kong gives for the field that does not parse. */
function parsePair(cert: string, key: string, path: string, names: [string, string], errors: FieldError[]): { x509: X509Certificate; key: KeyObject } | null {
  let x509: X509Certificate;
  let privateKey: KeyObject;
  try {
    x509 = new X509Certificate(cert);
  } catch (err) {
    errors.push({ path: join(path, names[0]), message: `invalid certificate: ${(err as Error).message}` });
    return null;
  }
  try {
    privateKey = createPrivateKey(key);
  } catch (err) {
    errors.push({ path: join(path, names[1]), message: `invalid key: ${(err as Error).message}` });
    return null;
  }
  if (!x509.checkPrivateKey(privateKey)) {
    errors.push({ path, message: `${names[0]}: certificate does not match key` });
    return null;
  }
  return { x509, key: privateKey };
}

export function checkCertificate(certificate: Certificate, path: string, errors: FieldError[]): void {
  const main = parsePair(certificate.cert, certificate.key, path, ['cert', 'key'], errors);
  const { cert_alt: certAlt, key_alt: keyAlt } = certificate;
  if ((certAlt === null) !== (keyAlt === null)) {
    errors.push({ path, message: "all or none of these fields must be set: 'cert_alt', 'key_alt'" });
    return;
  }
  if (certAlt === null || keyAlt === null) return;
  const alt = parsePair(certAlt, keyAlt, path, ['cert_alt', 'key_alt'], errors);
  if (main && alt && main.key.asymmetricKeyType === alt.key.asymmetricKeyType) {
    errors.push({
      path,
      message: 'certificate and alternative certificate need to have different type (e.g. RSA and ECDSA), the provided certificates were both of the same type',
    });
  }
}
