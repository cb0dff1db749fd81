/**
 * A service SAS's response-header overrides (rscc, rscd, rsce, rscl, rsct), made by the
 * official SDK, set those headers of the blob a plain HTTP client reads with it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AccountSASPermissions,
  BlobSASPermissions,
  ContainerSASPermissions,
  generateBlobSASQueryParameters,
  StorageSharedKeyCredential,
} from '@azure/storage-blob';
import { DEVELOPMENT_KEY } from '../../src/storage/persistence/accounts.ts';
import { startSharedKeyStorage } from './helpers.ts';

const OVERRIDES = {
  cacheControl: 'max-age=60',
  contentDisposition: 'attachment; filename="report.csv"',
  contentEncoding: 'identity',
  contentLanguage: 'fr-FR',
  contentType: 'text/csv; charset=utf-8',
};

function headersOf(answer: Response) {
  return {
    cacheControl: answer.headers.get('cache-control'),
    contentDisposition: answer.headers.get('content-disposition'),
    contentEncoding: answer.headers.get('content-encoding'),
    contentLanguage: answer.headers.get('content-language'),
    contentType: answer.headers.get('content-type'),
  };
}

test('a service SAS with rscc, rscd, rsce, rscl and rsct sets those headers on Get Blob and Get Blob Properties; an account SAS sets none', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('shared');
  await container.create();
  const blob = container.getBlockBlobClient('report');
  const stored = {
    cacheControl: 'no-cache',
    contentDisposition: 'inline',
    contentEncoding: null,
    contentLanguage: 'en-GB',
    contentType: 'text/plain',
  };
  await blob.upload('a,b\n1,2\n', 8, {
    blobHTTPHeaders: {
      blobCacheControl: stored.cacheControl,
      blobContentDisposition: stored.contentDisposition,
      blobContentLanguage: stored.contentLanguage,
      blobContentType: stored.contentType,
    },
  });
  const expiresOn = new Date(Date.now() + 10 * 60_000);

  // A blob SAS made by generateSasUrl with every override.
  const blobSas = await blob.generateSasUrl({ permissions: BlobSASPermissions.parse('r'), expiresOn, ...OVERRIDES });
  for (const param of ['rscc', 'rscd', 'rsce', 'rscl', 'rsct']) assert.ok(new URL(blobSas).searchParams.has(param), `the SDK signed ${param}`);
  const got = await fetch(blobSas);
  assert.equal(got.status, 200);
  assert.deepEqual(headersOf(got), OVERRIDES);
  assert.equal(await got.text(), 'a,b\n1,2\n');
  const head = await fetch(blobSas, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.deepEqual(headersOf(head), OVERRIDES);

  // A container SAS from generateBlobSASQueryParameters with one override: the other headers are the blob's own.
  const containerSas = generateBlobSASQueryParameters(
    { containerName: 'shared', permissions: ContainerSASPermissions.parse('r'), expiresOn, contentType: 'application/vnd.ms-excel' },
    new StorageSharedKeyCredential('devstoreaccount1', DEVELOPMENT_KEY),
  ).toString();
  assert.deepEqual(headersOf(await fetch(`${blob.url}?${containerSas}`)), { ...stored, contentType: 'application/vnd.ms-excel' });

  // The overrides are signed: changing one breaks the signature.
  const tampered = new URL(blobSas);
  tampered.searchParams.set('rsct', 'text/html');
  const refused = await fetch(tampered);
  assert.equal(refused.status, 403);
  assert.equal(refused.headers.get('x-ms-error-code'), 'AuthenticationFailed');

  // An account SAS does not sign them, so overrides added to one are ignored.
  const accountSas = new URL(service.generateAccountSasUrl(expiresOn, AccountSASPermissions.parse('r'), 'o'));
  accountSas.searchParams.set('rsct', 'text/html');
  const viaAccount = await fetch(`${blob.url}?${accountSas.searchParams}`);
  assert.equal(viaAccount.status, 200);
  assert.deepEqual(headersOf(viaAccount), stored);

  // Reading with the key still shows the stored properties.
  assert.equal((await blob.getProperties()).contentType, stored.contentType);
});
