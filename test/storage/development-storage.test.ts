/**
 * `UseDevelopmentStorage=true`, verbatim: every storage SDK expands it to plain HTTP on
 * 127.0.0.1:10000, account devstoreaccount1 and the documented development key, so
 * this test needs that fixed port (it fails naming the port when something holds it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AccountSASPermissions, AccountSASResourceTypes, BlobServiceClient, ContainerClient, ContainerSASPermissions } from '@azure/storage-blob';
import { startStorage } from '../../src/storage/server.ts';
import { readMetric, tempDataDir } from '../helpers/index.ts';
import { DEVELOPMENT_KEY } from '../../src/storage/persistence/accounts.ts';

test('UseDevelopmentStorage=true works verbatim against offcloud storage on 127.0.0.1:10000: create, upload, list, download; SAS from the same key', async (t) => {
  const dataDir = await tempDataDir(t);
  const storage = await startStorage({ dataDir, host: '127.0.0.1', port: 10000, httpsPort: 0, logLevel: 'silent' });
  t.after(() => storage.close());
  assert.deepEqual(storage.details?.at(-1), { label: 'over plain HTTP', value: 'UseDevelopmentStorage=true' }, 'the table says so');

  const service = BlobServiceClient.fromConnectionString('UseDevelopmentStorage=true');
  const container = service.getContainerClient('from-the-emulator-habit');
  await container.create();
  await container.getBlockBlobClient('notes/hello.txt').upload('hello from UseDevelopmentStorage', 32);
  const names: string[] = [];
  for await (const blob of container.listBlobsFlat()) names.push(blob.name);
  assert.deepEqual(names, ['notes/hello.txt']);
  assert.equal((await container.getBlockBlobClient('notes/hello.txt').downloadToBuffer()).toString(), 'hello from UseDevelopmentStorage');
  const containers: string[] = [];
  for await (const c of service.listContainers()) containers.push(c.name);
  assert.deepEqual(containers, ['from-the-emulator-habit']);

  // A read-and-list service SAS for the container, made by the SDK from the same key.
  const expiresOn = new Date(Date.now() + 10 * 60_000);
  const readOnly = new ContainerClient(await container.generateSasUrl({ permissions: ContainerSASPermissions.parse('rl'), expiresOn }));
  const listed: string[] = [];
  for await (const blob of readOnly.listBlobsFlat()) listed.push(blob.name);
  assert.deepEqual(listed, ['notes/hello.txt']);
  assert.equal((await readOnly.getBlockBlobClient('notes/hello.txt').downloadToBuffer()).toString(), 'hello from UseDevelopmentStorage');
  await assert.rejects(readOnly.getBlockBlobClient('other.txt').upload('x', 1), (err: { statusCode?: number; code?: string }) => {
    assert.equal(err.statusCode, 403);
    assert.equal(err.code, 'AuthorizationPermissionMismatch');
    return true;
  });

  // An account SAS that may create and write, and one whose signature was tampered with.
  const accountSas = service.generateAccountSasUrl(expiresOn, AccountSASPermissions.parse('rwlc'), AccountSASResourceTypes.parse('sco').toString());
  const viaAccountSas = new BlobServiceClient(accountSas);
  await viaAccountSas.getContainerClient('made-with-sas').create();
  await viaAccountSas.getContainerClient('made-with-sas').getBlockBlobClient('a.txt').upload('via sas', 7);
  assert.equal((await container.getBlockBlobClient('notes/hello.txt').getProperties()).contentLength, 32);
  assert.equal((await service.getContainerClient('made-with-sas').getBlockBlobClient('a.txt').downloadToBuffer()).toString(), 'via sas');
  const tampered = new BlobServiceClient(accountSas.replace(/sig=[^&]+/, `sig=${encodeURIComponent(Buffer.alloc(32, 7).toString('base64'))}`));
  await assert.rejects(tampered.getContainerClient('made-with-sas').getProperties(), (err: { statusCode?: number; code?: string }) => {
    assert.equal(err.statusCode, 403);
    assert.equal(err.code, 'AuthenticationFailed');
    return true;
  });
  const expired = service.generateAccountSasUrl(new Date(Date.now() - 60_000), AccountSASPermissions.parse('rl'), 'sco');
  await assert.rejects(new BlobServiceClient(expired).getContainerClient('made-with-sas').getProperties(), { statusCode: 403 });
});

test('metrics: blobs written by Put Blob and Put Block List are counted; refused writes are not', async (t) => {
  const dataDir = await tempDataDir(t);
  const storage = await startStorage({ dataDir, host: '127.0.0.1', port: 0, httpsPort: 0, logLevel: 'silent' });
  t.after(() => storage.close());
  const base = new URL(storage.facts!.storage!.httpBlobEndpoint).origin;
  const service = BlobServiceClient.fromConnectionString(
    `DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=${DEVELOPMENT_KEY};BlobEndpoint=${base}/devstoreaccount1;`,
  );
  const container = service.getContainerClient('counted');
  await container.create();
  await container.getBlockBlobClient('small.txt').upload('one', 3);
  // Staged blocks and their commit: one blob written, not three.
  const blocks = container.getBlockBlobClient('blocks.txt');
  const ids = ['a', 'b'].map((id) => Buffer.from(id.padEnd(8, '0')).toString('base64'));
  for (const id of ids) await blocks.stageBlock(id, 'xy', 2);
  await blocks.commitBlockList(ids);
  await assert.rejects(
    container.getBlockBlobClient('small.txt').upload('two', 3, { conditions: { ifNoneMatch: '*' } }),
    (err: { statusCode?: number }) => err.statusCode === 409 || err.statusCode === 412,
  );
  assert.equal(await readMetric(base, 'offcloud_storage_blobs_written_total', { component: 'storage' }), 2);
  assert.ok(((await readMetric(base, 'offcloud_http_requests_total', { method: 'PUT', status: '201' })) ?? 0) >= 5);
});
