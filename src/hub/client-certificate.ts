/**
 * The certificate chain a device presented in its TLS handshake, for X.509
 * authentication (domain/x509.ts). Every TLS listener of the hub asks for one
 * and requires none: devices with keys send no certificate.
 */
import { X509Certificate } from 'node:crypto';
import { TLSSocket, type DetailedPeerCertificate } from 'node:tls';
import type { PresentedChain } from './domain/x509.ts';

/** The client's certificate first, then the issuers it sent; undefined when it sent none (or the socket is not TLS). */
export function presentedChain(socket: unknown): PresentedChain | undefined {
  if (!(socket instanceof TLSSocket)) return undefined;
  const chain: X509Certificate[] = [];
  const seen = new Set<string>();
  // Node links each certificate to its issuer among those sent; a self-signed one is its own issuer.
  for (let c: DetailedPeerCertificate | undefined = socket.getPeerCertificate(true); c?.raw && !seen.has(c.fingerprint256); c = c.issuerCertificate) {
    seen.add(c.fingerprint256);
    chain.push(new X509Certificate(c.raw));
  }
  return chain.length ? chain : undefined;
}
