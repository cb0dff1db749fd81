/**
 * Issuer strings. By default this issuer writes the real cloud's: the SDKs
 * accept them (reference §1.1 point 5) and resource servers written for the
 * cloud (Azurite's issuer prefix rule) accept its tokens. `--issuer-style
 * local` writes this server's own origin instead.
 */
export type IssuerStyle = 'cloud' | 'local';
export const ISSUER_STYLES = ['cloud', 'local'] as const;

export function issuerFor(version: 1 | 2, tenantId: string, style: IssuerStyle, origin: string): string {
  if (style === 'local') return version === 2 ? `${origin}/${tenantId}/v2.0` : `${origin}/${tenantId}/`;
  return version === 2 ? `https://login.microsoftonline.com/${tenantId}/v2.0` : `https://sts.windows.net/${tenantId}/`;
}

/** Both issuers (v1 and v2) of a tenant: what a verifier of this issuer's tokens accepts. */
export function identityIssuers(tenantId: string, style: IssuerStyle = 'cloud', origin = ''): string[] {
  return [issuerFor(1, tenantId, style, origin), issuerFor(2, tenantId, style, origin)];
}
