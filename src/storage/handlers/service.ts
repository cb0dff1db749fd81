/**
 * Account-level operations: List Containers (§4.10), Get/Set Blob Service Properties
 * (CORS rules enforced by cors.ts), Get Account Information (at any level of the URL),
 * Find Blobs by Tags across the account and Get User Delegation Key.
 */
import { containerListXml, httpDate, parseXmlBody, xml } from '../xml.ts';
import { errors } from '../errors.ts';
import { listingQuery, page, smallBody, type Operation } from './context.ts';
import { leaseElements } from './leases.ts';
import { parseCorsRules } from './cors.ts';
import { findBlobsByTags } from './tags.ts';
import { submitBatch } from './batch.ts';
import { isWellFormedVersion } from '../authentication/versions.ts';
import { MAX_USER_DELEGATION_KEY_MS, userDelegationKeyValue } from '../authentication/user-delegation.ts';

const MAX_PROPERTIES_BYTES = 64 * 1024;
/** Elements of <StorageServiceProperties> a Set may carry. */
const SERVICE_ELEMENTS = new Set(['Logging', 'HourMetrics', 'MinuteMetrics', 'Cors', 'DefaultServiceVersion', 'DeleteRetentionPolicy', 'StaticWebsite']);

/** List Containers (§4.10): `GET /?comp=list` with prefix, marker/NextMarker paging and include=metadata. */
export async function listContainers(op: Operation): Promise<void> {
  await op.authorize('list');
  const query = listingQuery(op);
  const now = op.store.now();
  const matching = op.store.listContainers().filter((c) => c.name.startsWith(query.prefix));
  const result = page(matching, (c) => c.name, query.marker, query.maxResults);
  await op.reply
    .code(200)
    .type('application/xml')
    .send(containerListXml(op.endpoint, result, query, (c) => leaseElements(c.lease, now)));
}

/**
 * Get Blob Service Stats, on the secondary endpoint only (the primary refuses it, as the
 * service does): the secondary is this same data, so replication is live and synced now.
 */
async function getServiceStats(op: Operation): Promise<void> {
  await op.authorize('read');
  if (!op.secondary) throw errors.invalidQuery('comp');
  await op.reply
    .code(200)
    .type('application/xml')
    .send(xml({ StorageServiceStats: { GeoReplication: { Status: 'live', LastSyncTime: httpDate(op.store.now()) } } }));
}

/** Get Account Information: the SKU and kind the SDK's getAccountInfo reads. */
export async function getAccountInformation(op: Operation): Promise<void> {
  await op.authorize('read');
  op.reply.header('x-ms-sku-name', 'Standard_LRS').header('x-ms-account-kind', 'StorageV2').header('x-ms-is-hns-enabled', 'false');
  await op.reply.code(200).send();
}

async function getServiceProperties(op: Operation): Promise<void> {
  await op.authorize('read');
  await op.reply
    .code(200)
    .type('application/xml')
    .send(xml({ StorageServiceProperties: op.serviceProperties.current.elements }));
}

/** Set Blob Service Properties: the elements given replace the stored ones; CORS rules are checked before anything is kept. */
async function setServiceProperties(op: Operation): Promise<void> {
  await op.authorize('write');
  const parsed = parseXmlBody(await smallBody(op, MAX_PROPERTIES_BYTES));
  const root = parsed?.StorageServiceProperties;
  if (root === undefined) throw errors.invalidXml();
  const given = typeof root === 'object' && root !== null ? (root as Record<string, unknown>) : {};
  for (const name of Object.keys(given)) if (!SERVICE_ELEMENTS.has(name)) throw errors.invalidXmlNodeValue(name);
  const version = given.DefaultServiceVersion;
  if (version !== undefined && (typeof version !== 'string' || !isWellFormedVersion(version))) throw errors.invalidXmlNodeValue('DefaultServiceVersion');
  const cors = 'Cors' in given ? parseCorsRules(given) : undefined;
  await op.serviceProperties.set(given, cors);
  await op.reply.code(202).send();
}

/**
 * Get User Delegation Key: for a bearer token only, a key valid from `Start` (default now)
 * to `Expiry` (at most seven days on), signed for the token's object id and tenant.
 */
async function getUserDelegationKey(op: Operation): Promise<void> {
  if (!op.tokenIdentity) throw errors.authenticationFailed('Only a bearer token may request a user delegation key.');
  await op.authorize('read');
  const keyInfo = parseXmlBody(await smallBody(op, MAX_PROPERTIES_BYTES))?.KeyInfo as { Start?: unknown; Expiry?: unknown } | undefined;
  if (!keyInfo || typeof keyInfo !== 'object') throw errors.invalidXml();
  const now = op.store.now();
  const time = (value: unknown, node: string) => {
    const ms = typeof value === 'string' ? Date.parse(value) : NaN;
    if (Number.isNaN(ms)) throw errors.invalidXmlNodeValue(node);
    return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
  };
  const start = keyInfo.Start === undefined || keyInfo.Start === '' ? new Date(now).toISOString().replace(/\.\d+Z$/, 'Z') : time(keyInfo.Start, 'Start');
  const expiry = time(keyInfo.Expiry, 'Expiry');
  if (Date.parse(expiry) <= Date.parse(start) || Date.parse(expiry) <= now || Date.parse(expiry) > now + MAX_USER_DELEGATION_KEY_MS) {
    throw errors.invalidXmlNodeValue('Expiry');
  }
  const fields = { ...op.tokenIdentity, start, expiry, service: 'b', version: op.serviceVersion };
  await op.reply
    .code(200)
    .type('application/xml')
    .send(
      xml({
        UserDelegationKey: {
          SignedOid: fields.objectId,
          SignedTid: fields.tenantId,
          SignedStart: start,
          SignedExpiry: expiry,
          SignedService: 'b',
          SignedVersion: fields.version,
          Value: userDelegationKeyValue(op.account, fields),
        },
      }),
    );
}

export async function serviceOperation(op: Operation): Promise<void> {
  const method = op.request.method;
  const comp = op.query.get('comp');
  const restype = op.query.get('restype');
  const read = method === 'GET' || method === 'HEAD';
  if (method === 'GET' && comp === 'list') return listContainers(op);
  if (restype === 'account' && comp === 'properties' && read) return getAccountInformation(op);
  if (restype === 'service' && comp === 'properties' && method === 'GET') return getServiceProperties(op);
  if (restype === 'service' && comp === 'properties' && method === 'PUT') return setServiceProperties(op);
  if (method === 'GET' && comp === 'blobs') return findBlobsByTags(op);
  if (restype === 'service' && comp === 'userdelegationkey' && method === 'POST') return getUserDelegationKey(op);
  if (comp === 'batch' && method === 'POST') return submitBatch(op);
  if (restype === 'service' && comp === 'stats' && method === 'GET') return getServiceStats(op);
  throw errors.invalidQuery('comp');
}
