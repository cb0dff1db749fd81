/**
 * Set/Get Container ACL: the container's public access level (`x-ms-blob-public-access`:
 * `container` lets anyone list and read, `blob` lets anyone read blobs) and up to five
 * stored access policies (`<SignedIdentifiers>`), which a SAS names with `si`.
 */
import { errors } from '../errors.ts';
import { httpDate, parseXmlBody, xml } from '../xml.ts';
import type { ContainerRecord, SignedIdentifier } from '../persistence/store.ts';
import { header, smallBody, type Operation } from './context.ts';
import { checkWriteConditions, conditionsOf } from './conditions.ts';
import { checkLeaseCondition } from './leases.ts';

/** The most stored access policies a container holds, as the service allows. */
const MAX_POLICIES = 5;
const MAX_ACL_BYTES = 64 * 1024;

export function publicAccessHeader(op: Operation): ContainerRecord['publicAccess'] {
  const value = header(op, 'x-ms-blob-public-access');
  if (value === undefined || value === '') return undefined;
  if (value !== 'container' && value !== 'blob') throw errors.invalidHeader('x-ms-blob-public-access', value);
  return value;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** `<SignedIdentifiers>` of a Set Container ACL body; an empty body clears the policies. */
function parseSignedIdentifiers(body: string): SignedIdentifier[] {
  if (body.trim() === '') return [];
  const parsed = parseXmlBody(body);
  const root = parsed?.SignedIdentifiers;
  if (root === undefined) throw errors.invalidXml();
  type Entry = { Id?: unknown; AccessPolicy?: { Start?: unknown; Expiry?: unknown; Permission?: unknown } };
  const list = (typeof root === 'object' && root !== null ? ((root as { SignedIdentifier?: Entry[] }).SignedIdentifier ?? []) : []) as Entry[];
  if (list.length > MAX_POLICIES) throw errors.invalidXml();
  return list.map((entry) => {
    const id = text(entry.Id);
    if (!id || id.length > 64) throw errors.invalidXmlNodeValue('Id');
    const policy = entry.AccessPolicy ?? {};
    const start = text(policy.Start);
    const expiry = text(policy.Expiry);
    const permission = text(policy.Permission);
    for (const [node, value] of [
      ['Start', start],
      ['Expiry', expiry],
    ] as const) {
      if (value !== undefined && Number.isNaN(Date.parse(value))) throw errors.invalidXmlNodeValue(node);
    }
    if (permission !== undefined && !/^[racwdxyltfmei]+$/.test(permission)) throw errors.invalidXmlNodeValue('Permission');
    return { id, ...(start ? { start } : {}), ...(expiry ? { expiry } : {}), ...(permission ? { permission } : {}) };
  });
}

export async function setContainerAcl(op: Operation, name: string): Promise<void> {
  await op.authorize('write');
  const publicAccess = publicAccessHeader(op);
  const policies = parseSignedIdentifiers(await smallBody(op, MAX_ACL_BYTES));
  const { ifModifiedSince, ifUnmodifiedSince } = conditionsOf(op);
  const record = await op.store.updateContainer(name, (current, now) => {
    checkWriteConditions(
      { ...(ifModifiedSince !== undefined ? { ifModifiedSince } : {}), ...(ifUnmodifiedSince !== undefined ? { ifUnmodifiedSince } : {}) },
      current,
    );
    if (header(op, 'x-ms-lease-id')) checkLeaseCondition(op, current.lease, now, 'container');
    const { publicAccess: _access, accessPolicies: _policies, ...rest } = current;
    return {
      ...rest,
      ...(publicAccess ? { publicAccess } : {}),
      ...(policies.length ? { accessPolicies: policies } : {}),
      etag: op.store.newEtag(),
      modified: now,
    };
  });
  op.reply.header('etag', record.etag).header('last-modified', httpDate(record.modified));
  await op.reply.code(200).send();
}

export async function getContainerAcl(op: Operation, name: string): Promise<void> {
  await op.authorize('read');
  const record = op.store.getContainer(name);
  if (header(op, 'x-ms-lease-id')) checkLeaseCondition(op, record.lease, op.store.now(), 'container');
  op.reply.header('etag', record.etag).header('last-modified', httpDate(record.modified));
  if (record.publicAccess) op.reply.header('x-ms-blob-public-access', record.publicAccess);
  const identifiers = (record.accessPolicies ?? []).map((p) => ({
    Id: p.id,
    AccessPolicy: { ...(p.start ? { Start: p.start } : {}), ...(p.expiry ? { Expiry: p.expiry } : {}), ...(p.permission ? { Permission: p.permission } : {}) },
  }));
  await op.reply
    .code(200)
    .type('application/xml')
    .send(xml({ SignedIdentifiers: identifiers.length ? { SignedIdentifier: identifiers } : '' }));
}
