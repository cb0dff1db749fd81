/**
 * The string a shared access signature signs, in each form the service still accepts:
 * the form is chosen by the SAS's signed version (`sv`), as the service does, so a SAS
 * made years ago by an old SDK (or made today with `version: '2015-04-05'`) verifies.
 * A version newer than any form here is signed in the newest form.
 */

/** Reads one query parameter of the SAS ('' when absent). */
export type SasField = (name: string) => string;

/** The response-header overrides a service SAS signs (2013-08-15 and later), in signing order. */
export const RESPONSE_HEADER_FIELDS = ['rscc', 'rscd', 'rsce', 'rscl', 'rsct'] as const;

/**
 * The signed resource: `/blob/<account>/<container>[/<blob>]` from 2015-02-21, before that
 * without the service name.
 */
export function canonicalSasResource(version: string, account: string, container: string, blob: string | undefined): string {
  const path = `/${account}/${container}${blob === undefined ? '' : `/${blob}`}`;
  return version >= '2015-02-21' ? `/blob${path}` : path;
}

/**
 * A service SAS signed with an account key. `snapshot` is the snapshot time or version
 * id a `bs`/`bv` SAS names (2018-11-09 and later sign it).
 */
export function serviceSasStringToSign(q: SasField, canonicalResource: string, snapshot: string): string {
  const version = q('sv');
  const head = [q('sp'), q('st'), q('se'), canonicalResource, q('si')];
  const overrides = RESPONSE_HEADER_FIELDS.map((name) => q(name));
  let fields: string[];
  if (version >= '2020-12-06') fields = [...head, q('sip'), q('spr'), version, q('sr'), snapshot, q('ses'), ...overrides];
  else if (version >= '2018-11-09') fields = [...head, q('sip'), q('spr'), version, q('sr'), snapshot, ...overrides];
  else if (version >= '2015-04-05') fields = [...head, q('sip'), q('spr'), version, ...overrides];
  else if (version >= '2013-08-15') fields = [...head, version, ...overrides];
  else if (version >= '2012-02-12') fields = [...head, version];
  else fields = head;
  return fields.join('\n');
}

/** An account SAS (2015-04-05 and later; 2020-12-06 added the encryption scope). */
export function accountSasStringToSign(q: SasField, account: string): string {
  const version = q('sv');
  const fields = [account, q('sp'), q('ss'), q('srt'), q('st'), q('se'), q('sip'), q('spr'), version];
  if (version >= '2020-12-06') fields.push(q('ses'));
  return [...fields, ''].join('\n');
}

/**
 * A user delegation SAS (2018-11-09 and later), signed with a user delegation key: the
 * key's fields (skoid … skv) follow the resource; 2020-02-10 added the authorized and
 * unauthorized object ids and the correlation id, 2020-12-06 the encryption scope,
 * 2025-07-05 the delegated user's tenant and object id, 2026-04-06 the signed request
 * headers and query parameters.
 */
export function userDelegationSasStringToSign(q: SasField, canonicalResource: string, snapshot: string): string {
  const version = q('sv');
  const key = [q('skoid'), q('sktid'), q('skt'), q('ske'), q('sks'), q('skv')];
  const fields = [q('sp'), q('st'), q('se'), canonicalResource, ...key];
  if (version >= '2020-02-10') fields.push(q('saoid'), q('suoid'), q('scid'));
  if (version >= '2025-07-05') fields.push(q('skdutid'), q('sduoid'));
  fields.push(q('sip'), q('spr'), version, q('sr'), snapshot);
  if (version >= '2020-12-06') fields.push(q('ses'));
  if (version >= '2026-04-06') fields.push(q('srh'), q('srq'));
  fields.push(...RESPONSE_HEADER_FIELDS.map((name) => q(name)));
  return fields.join('\n');
}
