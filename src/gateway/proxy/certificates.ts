/**
 * The HTTPS listener's certificates by server name, compiled once per
 * load: Kong's order for the name a client sends (SNI) is an exact SNI,
 * then a prefix wildcard (`*.example.com` for `api.example.com`), then a
 * suffix wildcard (`api.example.*`), then the SNI `*`, and else the
 * gateway's own certificate. A client that sends no name gets the
 * gateway's own certificate, as Kong serves its default one.
 */
import type { Certificate, Entities } from '../config/model.ts';

export class CertificateTable {
  private readonly byName = new Map<string, Certificate>();

  constructor(entities: Pick<Entities, 'certificates' | 'snis'>) {
    const byId = new Map(entities.certificates.map((c) => [c.id, c]));
    for (const sni of entities.snis) this.byName.set(sni.name, byId.get(sni.certificate.id)!);
  }

  /** Whether any name has a certificate of its own (else every handshake gets the gateway's). */
  get empty(): boolean {
    return this.byName.size === 0;
  }

  /** The certificate for a client's server name, or undefined for the gateway's own. */
  certificateFor(serverName: string): Certificate | undefined {
    const name = serverName.toLowerCase();
    const dot = name.indexOf('.');
    const last = name.lastIndexOf('.');
    return (
      this.byName.get(name) ??
      (dot > 0 ? this.byName.get(`*${name.slice(dot)}`) : undefined) ??
      (last > 0 ? this.byName.get(`${name.slice(0, last)}.*`) : undefined) ??
      this.byName.get('*')
    );
  }
}
