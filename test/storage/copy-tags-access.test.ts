/**
 * Copies (Copy Blob, Copy Blob From URL, Put Blob From URL, Put Block From URL, Append
 * Block From URL, Abort Copy), blob index tags (set, get, x-ms-tags, Find Blobs by Tags,
 * x-ms-if-tags), container ACL with public access, and service properties with CORS
 * enforced, through the official SDK and raw HTTP where the SDK hides the wire.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BlobSASPermissions, ContainerClient, type RestError } from '@azure/storage-blob';
import { startSharedKeyStorage } from './helpers.ts';

const refusedWith = (statusCode: number, code: string) => (err: RestError) => {
  assert.equal(err.statusCode, statusCode, err.message);
  assert.equal(err.code, code, err.message);
  return true;
};

test('Copy Blob (sync and async), Put Blob From URL, Put Block From URL, Append Block From URL; Abort Copy finds nothing pending', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('copies');
  await container.create();
  const source = container.getBlockBlobClient('source.txt');
  await source.upload('0123456789', 10, { blobHTTPHeaders: { blobContentType: 'text/plain' }, metadata: { origin: 'source' } });

  const poller = await container.getBlobClient('async-copy.txt').beginCopyFromURL(source.url);
  const copied = await poller.pollUntilDone();
  assert.equal(copied.copyStatus, 'success');
  const copy = container.getBlobClient('async-copy.txt');
  assert.equal((await copy.downloadToBuffer()).toString(), '0123456789');
  const properties = await copy.getProperties();
  assert.equal(properties.copyStatus, 'success');
  assert.equal(properties.copySource, source.url);
  assert.equal(properties.contentType, 'text/plain');
  assert.deepEqual(properties.metadata, { origin: 'source' });

  const sync = await container.getBlobClient('sync-copy.txt').syncCopyFromURL(source.url);
  assert.equal(sync.copyStatus, 'success');
  assert.equal((await container.getBlobClient('sync-copy.txt').downloadToBuffer()).toString(), '0123456789');

  // A source with its own SAS is fetched over HTTP and read with that SAS.
  const sourceSas = await source.generateSasUrl({ permissions: BlobSASPermissions.parse('r'), expiresOn: new Date(Date.now() + 600_000) });
  await container.getBlockBlobClient('from-url.txt').syncUploadFromURL(sourceSas);
  assert.equal((await container.getBlobClient('from-url.txt').downloadToBuffer()).toString(), '0123456789');

  const blocks = container.getBlockBlobClient('from-blocks.txt');
  const id = (n: string) => Buffer.from(n.padEnd(6, '-')).toString('base64');
  await blocks.stageBlockFromURL(id('a'), source.url, 5, 5);
  await blocks.stageBlockFromURL(id('b'), sourceSas, 0, 5);
  await blocks.commitBlockList([id('a'), id('b')]);
  assert.equal((await blocks.downloadToBuffer()).toString(), '5678901234');

  const log = container.getAppendBlobClient('log.txt');
  await log.create();
  await log.appendBlockFromURL(source.url, 2, 3);
  assert.equal((await log.downloadToBuffer()).toString(), '234');

  await assert.rejects(copy.abortCopyFromURL(properties.copyId!), refusedWith(409, 'NoPendingCopyOperation'));
  await assert.rejects(copy.abortCopyFromURL('00000000-0000-0000-0000-000000000000'), refusedWith(409, 'CopyIdMismatch'));
  await assert.rejects(container.getBlobClient('nothing').syncCopyFromURL(`${container.url}/missing-source`), refusedWith(404, 'CannotVerifyCopySource'));
  // A source URL this server cannot reach is refused, and the server keeps serving.
  await assert.rejects(container.getBlobClient('nothing').syncCopyFromURL('http://127.0.0.1:1/x/y'), refusedWith(400, 'CannotVerifyCopySource'));
  assert.equal(await container.getBlobClient('nothing').exists(), false);
});

test('blob index tags: set, get, x-ms-tags on upload, x-ms-if-tags conditions, Find Blobs by Tags in the account and a container', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const first = service.getContainerClient('tagged-a');
  const second = service.getContainerClient('tagged-b');
  await first.create();
  await second.create();
  await first.getBlockBlobClient('one').upload('1', 1, { tags: { project: 'alpha', stage: 'raw' } });
  await first.getBlockBlobClient('two').upload('2', 1, { tags: { project: 'beta', stage: 'raw' } });
  await second.getBlockBlobClient('three').upload('3', 1);
  await second.getBlobClient('three').setTags({ project: 'alpha', stage: 'done' });
  assert.deepEqual((await second.getBlobClient('three').getTags()).tags, { project: 'alpha', stage: 'done' });
  assert.equal((await first.getBlobClient('one').getProperties()).tagCount, 2);

  const found: string[] = [];
  for await (const blob of service.findBlobsByTags(`project = 'alpha'`)) found.push(`${blob.containerName}/${blob.name}:${JSON.stringify(blob.tags)}`);
  assert.deepEqual(found, ['tagged-a/one:{"project":"alpha"}', 'tagged-b/three:{"project":"alpha"}']);
  const raw: string[] = [];
  for await (const blob of service.findBlobsByTags(`"stage" = 'raw' AND @container = 'tagged-a' AND project > 'alpha'`)) raw.push(blob.name);
  assert.deepEqual(raw, ['two']);
  const inContainer: string[] = [];
  for await (const blob of first.findBlobsByTags(`stage = 'raw'`)) inContainer.push(blob.name);
  assert.deepEqual(inContainer, ['one', 'two']);
  const paged: string[][] = [];
  for await (const page of service.findBlobsByTags(`stage >= 'done'`).byPage({ maxPageSize: 2 })) paged.push(page.blobs.map((b) => b.name));
  assert.deepEqual(paged, [['one', 'two'], ['three']]);

  const one = first.getBlockBlobClient('one');
  await assert.rejects(one.upload('x', 1, { conditions: { tagConditions: `project = 'beta'` } }), refusedWith(412, 'ConditionNotMet'));
  await one.setMetadata({ ok: 'yes' }, { conditions: { tagConditions: `project = 'alpha' OR project = 'beta'` } });
  await assert.rejects(one.setTags({ 'bad key!': 'x' }), refusedWith(400, 'InvalidTag'));
  await assert.rejects(one.setTags(Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, 'v']))), refusedWith(400, 'InvalidTag'));
  await assert.rejects(service.findBlobsByTags(`project = `).next(), refusedWith(400, 'InvalidQueryParameterValue'));
  await one.setTags({});
  assert.deepEqual((await one.getTags()).tags, {});
});

test('Set/Get Container ACL: stored access policies round-trip; public access lets anonymous callers read (blob) and list (container)', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('public');
  await container.create();
  await container.getBlockBlobClient('open.txt').upload('open', 4);
  const anonymous = new ContainerClient(container.url);
  await assert.rejects(anonymous.getBlobClient('open.txt').downloadToBuffer(), (err: RestError) => err.statusCode === 401);

  const start = new Date(Date.UTC(2026, 0, 1));
  const expiry = new Date(Date.UTC(2030, 0, 1));
  await container.setAccessPolicy('blob', [{ id: 'readers', accessPolicy: { permissions: 'rl', startsOn: start, expiresOn: expiry } }]);
  const acl = await container.getAccessPolicy();
  assert.equal(acl.blobPublicAccess, 'blob');
  assert.deepEqual(
    acl.signedIdentifiers.map((s) => [s.id, s.accessPolicy.permissions, s.accessPolicy.expiresOn?.toISOString()]),
    [['readers', 'rl', expiry.toISOString()]],
  );
  assert.equal((await anonymous.getBlobClient('open.txt').downloadToBuffer()).toString(), 'open');
  await assert.rejects(anonymous.listBlobsFlat().next(), (err: RestError) => err.statusCode === 401 || err.statusCode === 403);
  await assert.rejects(anonymous.getBlockBlobClient('new.txt').upload('x', 1), (err: RestError) => err.statusCode === 401 || err.statusCode === 403);

  await container.setAccessPolicy('container');
  const names: string[] = [];
  for await (const blob of anonymous.listBlobsFlat()) names.push(blob.name);
  assert.deepEqual(names, ['open.txt']);
  assert.equal((await container.getProperties()).blobPublicAccess, 'container');
  await assert.rejects(anonymous.getBlockBlobClient('open.txt').delete(), (err: RestError) => err.statusCode === 403);

  await container.setAccessPolicy();
  await assert.rejects(anonymous.getBlobClient('open.txt').downloadToBuffer(), (err: RestError) => err.statusCode === 401);
  const six = Array.from({ length: 6 }, (_, i) => ({ id: `p${i}`, accessPolicy: { permissions: 'r' } }));
  await assert.rejects(container.setAccessPolicy(undefined, six), refusedWith(400, 'InvalidXmlDocument'));
});

test('service properties round-trip; CORS rules are enforced on preflight and on responses', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('cors');
  await container.create();
  await container.setAccessPolicy('container');
  const url = `${container.url}?restype=container&comp=list`;
  const preflight = (origin: string, method: string, headers?: string) =>
    fetch(url, {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': method, ...(headers ? { 'access-control-request-headers': headers } : {}) },
    });

  const none = await preflight('https://app.example', 'GET');
  assert.equal(none.status, 403);
  assert.equal(none.headers.get('x-ms-error-code'), 'CorsPreflightFailure');

  await service.setProperties({
    cors: [
      {
        allowedOrigins: 'https://app.example',
        allowedMethods: 'GET,PUT',
        allowedHeaders: 'x-ms-meta-*,content-type',
        exposedHeaders: 'x-ms-request-id',
        maxAgeInSeconds: 600,
      },
    ],
    defaultServiceVersion: '2021-08-06',
  });
  const properties = await service.getProperties();
  assert.equal(properties.cors?.[0]?.allowedOrigins, 'https://app.example');
  assert.equal(properties.cors?.[0]?.maxAgeInSeconds, 600);
  assert.equal(properties.defaultServiceVersion, '2021-08-06');
  assert.equal(properties.blobAnalyticsLogging?.read, false, 'what was not set keeps its default');

  const allowed = await preflight('https://app.example', 'PUT', 'x-ms-meta-owner,content-type');
  assert.equal(allowed.status, 200);
  assert.equal(allowed.headers.get('access-control-allow-origin'), 'https://app.example');
  assert.equal(allowed.headers.get('access-control-allow-methods'), 'PUT');
  assert.equal(allowed.headers.get('access-control-max-age'), '600');
  assert.equal((await preflight('https://evil.example', 'GET')).status, 403);
  assert.equal((await preflight('https://app.example', 'DELETE')).status, 403);
  assert.equal((await preflight('https://app.example', 'PUT', 'x-custom')).status, 403);

  const listed = await fetch(url, { headers: { origin: 'https://app.example' } });
  assert.equal(listed.status, 200);
  assert.equal(listed.headers.get('access-control-allow-origin'), 'https://app.example');
  assert.equal(listed.headers.get('access-control-expose-headers'), 'x-ms-request-id');
  const foreign = await fetch(url, { headers: { origin: 'https://evil.example' } });
  assert.equal(foreign.headers.get('access-control-allow-origin'), null);

  await assert.rejects(
    service.setProperties({ cors: [{ allowedOrigins: '*', allowedMethods: 'FETCH', allowedHeaders: '', exposedHeaders: '', maxAgeInSeconds: 1 }] }),
    refusedWith(400, 'InvalidXmlNodeValue'),
  );
  assert.equal((await service.getProperties()).cors?.length, 1, 'a refused Set keeps what was there');
  await service.setProperties({ cors: [] });
  assert.equal((await preflight('https://app.example', 'GET')).status, 403);
});
