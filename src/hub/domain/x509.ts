/**
 * X.509 device authentication, as the real hub does it. A device registered as
 * `selfSigned` names the thumbprints (SHA-1 or SHA-256 of the certificate, hex)
 * of the certificates it may present; one registered as `certificateAuthority`
 * presents a certificate whose subject CN is its id and which chains, through
 * the intermediates it sends, to a CA certificate uploaded to the hub and
 * verified (proof of possession, or `isVerified` at upload). The TLS handshake
 * has already proven the device holds the certificate's private key; these are
 * the checks on top of it, on node's own certificate parsing and signature
 * checks (the TLS layer cannot make them: the hub's CAs change while it runs).
 */
import { randomBytes, X509Certificate } from 'node:crypto';
import { newEtag } from './etag.ts';
import { HubError, invalidArgument } from './errors.ts';

export type X509Authentication =
  { type: 'selfSigned'; primaryThumbprint: string | null; secondaryThumbprint: string | null } | { type: 'certificateAuthority' };

/** What a device presented in its TLS handshake: its certificate first, then any intermediates. */
export type PresentedChain = readonly X509Certificate[];

const THUMBPRINT = /^(?:[0-9A-Fa-f]{40}|[0-9A-Fa-f]{64})$/;

function thumbprintFrom(value: unknown, name: string): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string' || !THUMBPRINT.test(value)) throw invalidArgument(`${name} must be a SHA-1 or SHA-256 thumbprint (40 or 64 hex digits)`);
  return value.toUpperCase();
}

/**
 * The `authentication` of a device PUT: `sas` (undefined here: keys), `selfSigned` with at least
 * one thumbprint, or `certificateAuthority`. `none` is refused, as the real hub refuses it for devices.
 */
export function x509AuthenticationFrom(auth: unknown): X509Authentication | undefined {
  if (typeof auth !== 'object' || auth === null) return undefined;
  const { type, x509Thumbprint } = auth as { type?: unknown; x509Thumbprint?: { primaryThumbprint?: unknown; secondaryThumbprint?: unknown } | null };
  // Without a type, thumbprints make a selfSigned device (what the service SDK's samples send).
  const hasThumbprint =
    typeof x509Thumbprint === 'object' && x509Thumbprint !== null && !!(x509Thumbprint.primaryThumbprint || x509Thumbprint.secondaryThumbprint);
  if (type === 'sas' || ((type === undefined || type === null) && !hasThumbprint)) return undefined;
  if (type === 'certificateAuthority') return { type };
  if (type !== 'selfSigned' && type !== undefined && type !== null)
    throw invalidArgument('authentication.type must be "sas", "selfSigned" or "certificateAuthority"');
  const given = typeof x509Thumbprint === 'object' && x509Thumbprint !== null ? x509Thumbprint : {};
  const primaryThumbprint = thumbprintFrom(given.primaryThumbprint, 'primaryThumbprint');
  const secondaryThumbprint = thumbprintFrom(given.secondaryThumbprint, 'secondaryThumbprint');
  if (!primaryThumbprint && !secondaryThumbprint) throw invalidArgument('a selfSigned device needs a primaryThumbprint or a secondaryThumbprint');
  return { type: 'selfSigned', primaryThumbprint, secondaryThumbprint };
}

function validAt(certificate: X509Certificate, now: Date): boolean {
  return new Date(certificate.validFrom) <= now && now <= new Date(certificate.validTo);
}

/** The certificate's subject common name (the device id of a CA-signed device certificate). */
export function commonName(certificate: X509Certificate): string | undefined {
  return certificate.subject
    .split('\n')
    .find((line) => line.startsWith('CN='))
    ?.slice(3);
}

function issuedBy(certificate: X509Certificate, issuer: X509Certificate, now: Date): boolean {
  return validAt(issuer, now) && certificate.checkIssued(issuer) && certificate.verify(issuer.publicKey);
}

/** How many certificates a chain may have between the device's and the hub's CA. */
const MAX_INTERMEDIATES = 8;

/**
 * Whether `chain[0]` is signed by one of `roots`, directly or through CA certificates among
 * the rest of `chain`, every certificate on the way valid at `now`.
 */
export function chainsTo(chain: PresentedChain, roots: readonly X509Certificate[], now: Date): boolean {
  const [leaf, ...rest] = chain;
  if (!leaf || !validAt(leaf, now)) return false;
  const intermediates = rest.filter((c) => c.ca);
  let current = leaf;
  for (let depth = 0; depth <= MAX_INTERMEDIATES; depth++) {
    if (roots.some((root) => issuedBy(current, root, now))) return true;
    const next = intermediates.findIndex((c) => issuedBy(current, c, now));
    if (next < 0) return false;
    current = intermediates.splice(next, 1)[0]!;
  }
  return false;
}

/**
 * Why `chain` does not authenticate a device registered with `auth` as `deviceId`, or undefined
 * when it does. `caCertificates` are the hub's verified CAs.
 */
export function x509Refusal(
  auth: X509Authentication,
  deviceId: string,
  chain: PresentedChain,
  caCertificates: readonly X509Certificate[],
  now: Date,
): string | undefined {
  const leaf = chain[0];
  if (!leaf) return 'no client certificate was presented';
  if (!validAt(leaf, now)) return 'the client certificate is expired or not yet valid';
  if (auth.type === 'selfSigned') {
    const presented = [leaf.fingerprint, leaf.fingerprint256].map((f) => f.replaceAll(':', '').toUpperCase());
    return [auth.primaryThumbprint, auth.secondaryThumbprint].some((t) => t !== null && presented.includes(t))
      ? undefined
      : "the client certificate's thumbprint is not one registered for the device";
  }
  if (commonName(leaf) !== deviceId) return `the client certificate's CN is ${JSON.stringify(commonName(leaf) ?? '')}, not the device id`;
  return chainsTo(chain, caCertificates, now) ? undefined : 'the client certificate does not chain to a verified CA certificate of the hub';
}

/** A CA certificate uploaded to the hub (the real hub's `certificates` of the IotHubs resource). */
export interface CaCertificateRecord {
  name: string;
  /** PEM, as uploaded. */
  certificate: string;
  isVerified: boolean;
  etag: string;
  created: string;
  updated: string;
  /** The code a proof-of-possession certificate must carry as its CN (generateVerificationCode). */
  verificationCode?: string;
}

export type CaCertificates = Record<string, CaCertificateRecord>;

export function caCertificateNamed(all: CaCertificates, name: string): CaCertificateRecord {
  const record = Object.hasOwn(all, name) ? all[name] : undefined;
  if (!record) throw new HubError('CertificateNotFound', `certificate ${name.slice(0, 64)} not found`);
  return record;
}

/** Certificate names the real hub allows. */
const NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

export function validateCertificateName(name: string): string {
  if (!NAME_PATTERN.test(name)) throw invalidArgument('a certificate name is 1 to 64 characters of A-Z a-z 0-9 _ -');
  return name;
}

/** Parses a PEM (or base64 DER) certificate; a bad one is an InvalidArgument. */
export function parseCertificate(text: unknown, what = 'certificate'): X509Certificate {
  if (typeof text !== 'string' || text.length > 64 * 1024) throw invalidArgument(`${what} must be a PEM or base64 certificate of at most 64 KB`);
  const trimmed = text.trim();
  try {
    return new X509Certificate(trimmed.startsWith('-----') ? trimmed : Buffer.from(trimmed, 'base64'));
  } catch {
    throw invalidArgument(`${what} is not an X.509 certificate`);
  }
}

/** A PUT of a CA certificate: new, or replacing one (which must be verified again unless `isVerified`). */
export function putCaCertificate(current: CaCertificateRecord | undefined, name: string, input: unknown, now = new Date()): CaCertificateRecord {
  const properties = (typeof input === 'object' && input !== null ? (input as { properties?: unknown }).properties : undefined) ?? input;
  const { certificate, isVerified } = (typeof properties === 'object' && properties !== null ? properties : {}) as {
    certificate?: unknown;
    isVerified?: unknown;
  };
  const parsed = parseCertificate(certificate);
  if (!parsed.ca) throw invalidArgument('the certificate is not a CA certificate (basicConstraints CA:TRUE)');
  if (isVerified !== undefined && typeof isVerified !== 'boolean') throw invalidArgument('isVerified must be a boolean');
  return {
    name,
    certificate: parsed.toString(),
    isVerified: isVerified === true,
    etag: newEtag(),
    created: current?.created ?? now.toISOString(),
    updated: now.toISOString(),
  };
}

export function withVerificationCode(record: CaCertificateRecord, now = new Date()): CaCertificateRecord {
  return { ...record, verificationCode: randomBytes(24).toString('hex').toUpperCase(), etag: newEtag(), updated: now.toISOString() };
}

/**
 * Proof of possession: a certificate whose CN is the verification code, signed with the CA's
 * key, shows the uploader holds it; the CA then authenticates devices.
 */
export function verifyCaCertificate(record: CaCertificateRecord, input: unknown, now = new Date()): CaCertificateRecord {
  if (!record.verificationCode) throw invalidArgument('generate a verification code first (POST …/generateVerificationCode)');
  const proof = parseCertificate(typeof input === 'object' && input !== null ? (input as { certificate?: unknown }).certificate : undefined);
  if (commonName(proof) !== record.verificationCode) throw invalidArgument("the certificate's CN is not the verification code");
  if (!issuedBy(proof, new X509Certificate(record.certificate), now) || !validAt(proof, now))
    throw invalidArgument('the certificate is not signed by this CA certificate, or not valid now');
  const { verificationCode: _used, ...rest } = record;
  return { ...rest, isVerified: true, etag: newEtag(), updated: now.toISOString() };
}

/** The certificate as the real hub's certificates API shows it. */
export function caCertificateView(record: CaCertificateRecord) {
  const parsed = new X509Certificate(record.certificate);
  return {
    name: record.name,
    etag: record.etag,
    type: 'Microsoft.Devices/IotHubs/Certificates',
    properties: {
      subject: commonName(parsed) ?? parsed.subject,
      expiry: new Date(parsed.validTo).toUTCString(),
      thumbprint: parsed.fingerprint.replaceAll(':', ''),
      isVerified: record.isVerified,
      created: new Date(record.created).toUTCString(),
      updated: new Date(record.updated).toUTCString(),
      certificate: record.certificate,
      ...(record.verificationCode ? { verificationCode: record.verificationCode } : {}),
    },
  };
}
