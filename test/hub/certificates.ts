/**
 * Certificates for the X.509 tests, made with @peculiar/x509 (the library the
 * local CA uses): self-signed device certificates, a root CA, an intermediate,
 * device certificates they sign, and the proof-of-possession certificate.
 */
import 'reflect-metadata';
import { webcrypto, X509Certificate } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;
let serial = 1;

export interface Issued {
  /** PEM of the certificate. */
  cert: string;
  /** PEM (PKCS#8) of its private key. */
  key: string;
  /** SHA-1 thumbprint, hex upper case: what a selfSigned registration names. */
  thumbprint: string;
  /** What an issuer needs to sign with it. */
  signer: { cert: x509.X509Certificate; key: CryptoKey };
}

async function keyPem(key: CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key as webcrypto.CryptoKey));
  return `-----BEGIN PRIVATE KEY-----\n${der.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END PRIVATE KEY-----\n`;
}

/**
 * A certificate for `subject` (`CN=…`): self-signed without `issuer`; a CA with `ca`;
 * valid from `notBefore` to `notAfter` (default: yesterday to a year on).
 */
export async function issue(subject: string, options: { issuer?: Issued; ca?: boolean; notBefore?: Date; notAfter?: Date } = {}): Promise<Issued> {
  const keys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as CryptoKeyPair;
  const now = Date.now();
  const common = {
    serialNumber: (serial++).toString(16).padStart(4, '0'),
    notBefore: options.notBefore ?? new Date(now - DAY_MS),
    notAfter: options.notAfter ?? new Date(now + 365 * DAY_MS),
    signingAlgorithm: ALGORITHM,
    extensions: options.ca
      ? [new x509.BasicConstraintsExtension(true, undefined, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true)]
      : [new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth])],
  };
  const cert = options.issuer
    ? await x509.X509CertificateGenerator.create({
        ...common,
        subject,
        issuer: options.issuer.signer.cert.subject,
        signingKey: options.issuer.signer.key,
        publicKey: keys.publicKey,
      })
    : await x509.X509CertificateGenerator.createSelfSigned({ ...common, name: subject, keys });
  const pem = cert.toString('pem') + '\n';
  return {
    cert: pem,
    key: await keyPem(keys.privateKey),
    thumbprint: new X509Certificate(pem).fingerprint.replaceAll(':', ''),
    signer: { cert, key: keys.privateKey },
  };
}
