/**
 * User delegation keys over real bearer tokens (Get User Delegation Key), user delegation
 * SAS made from them by the official SDK, and service SAS naming a stored access policy
 * (`si`): granted, bounded and revoked as the service does.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { XMLParser } from 'fast-xml-parser';
import { request } from 'undici';
import { BlobSASPermissions, BlobServiceClient, generateBlobSASQueryParameters, type RestError } from '@azure/storage-blob';
import { suiteCleanup } from '../identity/helpers.ts';
import { startSharedKeyStorage, startStorageStack } from './helpers.ts';

const cleanup = suiteCleanup(after);
const refusedWith = (statusCode: number, code: string) => (err: RestError) => {
  assert.equal(err.statusCode, statusCode, err.message);
  assert.equal(err.code, code, err.message);
  return true;
};
const V = { 'x-ms-version': '2026-10-06' };

test('Get User Delegation Key with a bearer token; the SDK signs a user delegation SAS with it; the SAS reads and writes within its permissions only', async () => {
  const stack = await startStorageStack(cleanup);
  const token = await stack.imdsToken();
  const auth = { authorization: `Bearer ${token}`, ...V };
  assert.equal((await stack.get('/delegated?restype=container', auth, 'PUT')).status, 201);

  const start = new Date(Date.now() - 60_000);
  const expiry = new Date(Date.now() + 3_600_000);
  const keyInfo = `<?xml version="1.0" encoding="utf-8"?><KeyInfo><Start>${start.toISOString().replace(/\.\d+Z$/, 'Z')}</Start><Expiry>${expiry.toISOString().replace(/\.\d+Z$/, 'Z')}</Expiry></KeyInfo>`;
  const post = (body: string, headers: Record<string, string>) =>
    request(`${stack.blobEndpoint}/?restype=service&comp=userdelegationkey`, { method: 'POST', body, headers, dispatcher: stack.identity.dispatcher });
  const answer = await post(keyInfo, auth);
  const text = await answer.body.text();
  assert.equal(answer.statusCode, 200, text);
  const key = (new XMLParser({ parseTagValue: false }).parse(text) as { UserDelegationKey: Record<string, string> }).UserDelegationKey;
  assert.equal(key.SignedService, 'b');
  assert.equal(key.SignedTid, stack.identity.tenantId);
  assert.equal(Buffer.from(key.Value!, 'base64').length, 32);

  const sas = (permissions: string, blobName = 'note.txt') =>
    generateBlobSASQueryParameters(
      { containerName: 'delegated', blobName, permissions: BlobSASPermissions.parse(permissions), expiresOn: new Date(Date.now() + 600_000) },
      {
        signedObjectId: key.SignedOid!,
        signedTenantId: key.SignedTid!,
        signedStartsOn: new Date(key.SignedStart!),
        signedExpiresOn: new Date(key.SignedExpiry!),
        signedService: key.SignedService!,
        signedVersion: key.SignedVersion!,
        value: key.Value!,
      },
      'devstoreaccount1',
    ).toString();
  const blobUrl = (query: string, blobName = 'note.txt') => `${stack.blobEndpoint}/delegated/${blobName}?${query}`;
  const put = (query: string, blobName?: string) =>
    request(blobUrl(query, blobName), {
      method: 'PUT',
      body: 'delegated',
      headers: { 'x-ms-blob-type': 'BlockBlob', ...V },
      dispatcher: stack.identity.dispatcher,
    });
  assert.equal((await put(sas('cw'))).statusCode, 201);
  const read = await request(blobUrl(sas('r')), { headers: V, dispatcher: stack.identity.dispatcher });
  assert.equal(read.statusCode, 200);
  assert.equal(await read.body.text(), 'delegated');

  const readOnly = await put(sas('r'));
  assert.equal(readOnly.statusCode, 403);
  assert.equal(readOnly.headers['x-ms-error-code'], 'AuthorizationPermissionMismatch');
  await readOnly.body.dump();
  const tampered = await put(sas('cw').replace(/skoid=[^&]+/, 'skoid=00000000-0000-0000-0000-000000000002'));
  assert.equal(tampered.statusCode, 403);
  assert.equal(tampered.headers['x-ms-error-code'], 'AuthenticationFailed');
  await tampered.body.dump();

  // Only bearer tokens get keys; a key longer than seven days is refused; a token without a data role gets none.
  const sharedKey = await post(keyInfo, V);
  assert.equal(sharedKey.statusCode, 401);
  await sharedKey.body.dump();
  const tooLong = await post(keyInfo.replace(/<Expiry>[^<]+/, `<Expiry>${new Date(Date.now() + 8 * 86_400_000).toISOString()}`), auth);
  assert.equal(tooLong.statusCode, 400);
  assert.equal(tooLong.headers['x-ms-error-code'], 'InvalidXmlNodeValue');
  await tooLong.body.dump();
  const stranger = await post(keyInfo, { authorization: `Bearer ${await stack.forgeToken({ oid: '00000000-0000-0000-0000-0000000000aa' })}`, ...V });
  assert.equal(stranger.statusCode, 403);
  assert.equal(stranger.headers['x-ms-error-code'], 'AuthorizationPermissionMismatch');
  await stranger.body.dump();
  const broken = await post('<KeyInfo><Expiry>soon</Expiry></KeyInfo>', auth);
  assert.equal(broken.statusCode, 400);
  await broken.body.dump();
});

test('a service SAS naming a stored access policy takes its permissions and expiry from it; removing the policy revokes it', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('policies');
  await container.create();
  await container.getBlockBlobClient('doc.txt').upload('policy', 6);
  await container.setAccessPolicy(undefined, [{ id: 'readers', accessPolicy: { permissions: 'r', expiresOn: new Date(Date.now() + 600_000) } }]);
  const viaPolicy = await container.getBlobClient('doc.txt').generateSasUrl({ identifier: 'readers' });
  assert.doesNotMatch(viaPolicy, /[?&]sp=/, 'the permissions live in the policy');
  const reader = new BlobServiceClient(`${service.url}?${new URL(viaPolicy).search.slice(1)}`).getContainerClient('policies').getBlobClient('doc.txt');
  assert.equal((await reader.downloadToBuffer()).toString(), 'policy');
  await assert.rejects(reader.delete(), refusedWith(403, 'AuthorizationPermissionMismatch'));

  // The same field in the SAS and in the policy is refused; a policy that is gone revokes the SAS.
  const doubled = await container.getBlobClient('doc.txt').generateSasUrl({ identifier: 'readers', permissions: BlobSASPermissions.parse('r') });
  await assert.rejects(
    new BlobServiceClient(doubled.replace('/policies/doc.txt', '')).getContainerClient('policies').getBlobClient('doc.txt').download(),
    refusedWith(403, 'AuthenticationFailed'),
  );
  await container.setAccessPolicy(undefined, []);
  await assert.rejects(reader.download(), refusedWith(403, 'AuthenticationFailed'));
});
