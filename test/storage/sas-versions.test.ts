/**
 * SAS of every signed version the service accepts verify: the SDK's own forms (2015-04-05,
 * 2018-11-09, 2020-12-06 and the account SAS before and after 2020-12-06), and the two
 * oldest documented forms (2012-02-12, 2013-08-15) built from the REST reference.
 * Shared Key requests with old and future x-ms-version values work too.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AccountSASPermissions,
  AccountSASResourceTypes,
  AccountSASServices,
  BlobClient,
  BlobSASPermissions,
  BlobServiceClient,
  ContainerClient,
  ContainerSASPermissions,
  generateAccountSASQueryParameters,
  generateBlobSASQueryParameters,
} from '@azure/storage-blob';
import {
  DEVELOPMENT_ACCOUNT as ACCOUNT,
  developmentCredential as credential,
  sharedKeyFetch,
  startSharedKeyStorage,
  signWithDevelopmentKey,
} from './helpers.ts';

/** The SAS the reference documents for versions before 2015-04-05, signed by hand. */
function oldServiceSas(version: '2012-02-12' | '2013-08-15', container: string, blob: string, permissions: string, expiry: string): string {
  const fields = [permissions, '', expiry, `/${ACCOUNT}/${container}/${blob}`, '', version];
  if (version === '2013-08-15') fields.push('', '', '', '', '');
  const sig = signWithDevelopmentKey(fields.join('\n'));
  return new URLSearchParams({ sv: version, sr: 'b', sp: permissions, se: expiry, sig }).toString();
}

test('service and account SAS of every signed version verify: 2012-02-12 through the newest, and the SDK forms', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('versions');
  await container.create();
  await container.getBlockBlobClient('a.txt').upload('version check', 13);
  const expiresOn = new Date(Date.now() + 10 * 60_000);

  for (const version of ['2015-04-05', '2018-11-09', '2019-12-12', '2020-12-06', '2026-04-06']) {
    const blobSas = generateBlobSASQueryParameters(
      { containerName: 'versions', blobName: 'a.txt', permissions: BlobSASPermissions.parse('r'), expiresOn, version },
      credential,
    ).toString();
    const viaBlobSas = new BlobClient(`${container.url}/a.txt?${blobSas}`);
    assert.equal((await viaBlobSas.downloadToBuffer()).toString(), 'version check', `blob SAS ${version}`);

    const containerSas = generateBlobSASQueryParameters(
      { containerName: 'versions', permissions: ContainerSASPermissions.parse('rl'), expiresOn, version },
      credential,
    ).toString();
    const names: string[] = [];
    for await (const blob of new ContainerClient(`${container.url}?${containerSas}`).listBlobsFlat()) names.push(blob.name);
    assert.deepEqual(names, ['a.txt'], `container SAS ${version}`);

    const accountSas = generateAccountSASQueryParameters(
      {
        permissions: AccountSASPermissions.parse('rl'),
        services: AccountSASServices.parse('b').toString(),
        resourceTypes: AccountSASResourceTypes.parse('sco').toString(),
        expiresOn,
        version,
      },
      credential,
    ).toString();
    const viaAccountSas = new BlobServiceClient(`${service.url}?${accountSas}`);
    assert.equal((await viaAccountSas.getContainerClient('versions').getBlobClient('a.txt').getProperties()).contentLength, 13, `account SAS ${version}`);
  }

  const expiry = expiresOn.toISOString().replace(/\.\d+Z$/, 'Z');
  for (const version of ['2012-02-12', '2013-08-15'] as const) {
    const answer = await fetch(`${container.url}/a.txt?${oldServiceSas(version, 'versions', 'a.txt', 'r', expiry)}`);
    assert.equal(answer.status, 200, version);
    assert.equal(await answer.text(), 'version check');
  }
  // The same SAS with the signature of another version's form does not verify.
  const mismatched = oldServiceSas('2013-08-15', 'versions', 'a.txt', 'r', expiry).replace('sv=2013-08-15', 'sv=2012-02-12');
  const refused = await fetch(`${container.url}/a.txt?${mismatched}`);
  assert.equal(refused.status, 403);
  assert.equal(refused.headers.get('x-ms-error-code'), 'AuthenticationFailed');
  // A signed version that is no date is refused, and the server keeps serving.
  const malformed = await fetch(
    `${container.url}/a.txt?${oldServiceSas('2013-08-15', 'versions', 'a.txt', 'r', expiry).replace('sv=2013-08-15', 'sv=2013-8-15')}`,
  );
  assert.equal(malformed.status, 403);
  assert.equal((await container.getBlockBlobClient('a.txt').downloadToBuffer()).toString(), 'version check');
});

test('Shared Key requests of old, current and future x-ms-version values are served; malformed ones are refused with InvalidHeaderValue', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const listing = `${service.url}/?comp=list`;
  const send = (version: string) => sharedKeyFetch(listing, { headers: { 'x-ms-version': version } });
  for (const version of ['2009-09-19', '2015-04-05', '2021-08-06', '2030-01-01']) {
    const answer = await send(version);
    assert.equal(answer.status, 200, `${version}: ${await answer.clone().text()}`);
    assert.match(await answer.text(), /<EnumerationResults/);
  }
  for (const version of ['2009', '2021-02-29', 'v2', '2008-10-27']) {
    const answer = await send(version);
    assert.equal(answer.status, 400, version);
    assert.equal(answer.headers.get('x-ms-error-code'), 'InvalidHeaderValue');
    assert.match(await answer.text(), new RegExp(`<HeaderName>x-ms-version</HeaderName><HeaderValue>${version}</HeaderValue>`));
  }
});
