/**
 * What a SAS may do, operation by operation and level by level, as the service documents
 * it, and how strictly its fields are read. SAS made by the official SDK where it can make
 * them; the malformed ones are signed here (the account SAS string-to-sign of 2020-12-06).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AccountSASPermissions,
  AccountSASResourceTypes,
  AccountSASServices,
  BlobSASPermissions,
  ContainerSASPermissions,
  generateAccountSASQueryParameters,
  generateBlobSASQueryParameters,
} from '@azure/storage-blob';
import { DEVELOPMENT_ACCOUNT as ACCOUNT, developmentCredential as credential, startSharedKeyStorage, signWithDevelopmentKey } from './helpers.ts';

const expiresOn = () => new Date(Date.now() + 10 * 60_000);

/** Status and x-ms-error-code of one request with a SAS query. */
async function send(url: string, method: string, headers: Record<string, string> = {}, body?: string): Promise<string> {
  const answer = await fetch(url, { method, headers, body });
  await answer.arrayBuffer();
  return `${answer.status}${answer.ok ? '' : ` ${answer.headers.get('x-ms-error-code')}`}`;
}

test('a service SAS reaches blobs and List Blobs only: a container SAS cannot create, delete or read its container, whatever its letters; c or w put a blob, only w writes blocks', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const endpoint = service.url.replace(/\/$/, '');
  await service.getContainerClient('box').create();
  await service.getContainerClient('box').getBlockBlobClient('there').upload('x', 1);
  const containerSas = (permissions: string, containerName = 'box') =>
    generateBlobSASQueryParameters({ containerName, permissions: ContainerSASPermissions.parse(permissions), expiresOn: expiresOn() }, credential).toString();
  const blobSas = (permissions: string, blobName: string) =>
    generateBlobSASQueryParameters(
      { containerName: 'box', blobName, permissions: BlobSASPermissions.parse(permissions), expiresOn: expiresOn() },
      credential,
    ).toString();
  const all = 'racwdl';

  const refused = '403 AuthorizationPermissionMismatch';
  assert.equal(await send(`${endpoint}/box?restype=container&${containerSas(all)}`, 'DELETE'), refused, 'Delete Container');
  assert.equal(await send(`${endpoint}/fresh?restype=container&${containerSas(all, 'fresh')}`, 'PUT'), refused, 'Create Container');
  assert.equal(await send(`${endpoint}/box?restype=container&${containerSas(all)}`, 'GET'), refused, 'Get Container Properties');
  assert.equal(await send(`${endpoint}/box?restype=container&${containerSas(all)}`, 'HEAD'), refused, 'Get Container Properties (HEAD)');
  assert.equal(await service.getContainerClient('box').exists(), true);
  assert.equal(await service.getContainerClient('fresh').exists(), false);

  assert.equal(await send(`${endpoint}/box?restype=container&comp=list&${containerSas('l')}`, 'GET'), '200', 'List Blobs with l');
  assert.equal(await send(`${endpoint}/box?restype=container&comp=list&${containerSas('r')}`, 'GET'), refused, 'List Blobs without l');

  const put = { 'x-ms-blob-type': 'BlockBlob' };
  const block = Buffer.from('block-1').toString('base64');
  const blockList = `<?xml version="1.0" encoding="utf-8"?><BlockList><Latest>${block}</Latest></BlockList>`;
  for (const [sas, label] of [
    [containerSas, 'container SAS'],
    [(letters: string) => blobSas(letters, 'made'), 'blob SAS'],
  ] as const) {
    assert.equal(await send(`${endpoint}/box/made?${sas('c')}`, 'PUT', put, 'c'), '201', `${label}: Put Blob with c`);
    assert.equal(await send(`${endpoint}/box/made?${sas('w')}`, 'PUT', put, 'w'), '201', `${label}: Put Blob with w`);
    assert.equal(await send(`${endpoint}/box/made?${sas('r')}`, 'PUT', put, 'r'), refused, `${label}: Put Blob with r`);
    assert.equal(
      await send(`${endpoint}/box/made?comp=block&blockid=${encodeURIComponent(block)}&${sas('c')}`, 'PUT', {}, 'b'),
      refused,
      `${label}: Put Block with c`,
    );
    assert.equal(
      await send(`${endpoint}/box/made?comp=block&blockid=${encodeURIComponent(block)}&${sas('w')}`, 'PUT', {}, 'b'),
      '201',
      `${label}: Put Block with w`,
    );
    assert.equal(await send(`${endpoint}/box/made?comp=blocklist&${sas('c')}`, 'PUT', {}, blockList), refused, `${label}: Put Block List with c`);
    assert.equal(await send(`${endpoint}/box/made?comp=blocklist&${sas('w')}`, 'PUT', {}, blockList), '201', `${label}: Put Block List with w`);
    assert.equal(await send(`${endpoint}/box/made?${sas('w')}`, 'GET'), refused, `${label}: Get Blob with w`);
    assert.equal(await send(`${endpoint}/box/made?${sas('r')}`, 'GET'), '200', `${label}: Get Blob with r`);
    assert.equal(await send(`${endpoint}/box/made?${sas('rw')}`, 'DELETE'), refused, `${label}: Delete Blob without d`);
    assert.equal(await send(`${endpoint}/box/made?${sas('d')}`, 'DELETE'), '202', `${label}: Delete Blob with d`);
  }
});

test('an account SAS reaches the levels its srt names: container operations with srt=c (c or w create, d deletes, r reads properties), List Containers with srt=s', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const endpoint = service.url.replace(/\/$/, '');
  const accountSas = (permissions: string, resourceTypes: string) =>
    generateAccountSASQueryParameters(
      {
        expiresOn: expiresOn(),
        permissions: AccountSASPermissions.parse(permissions),
        resourceTypes: AccountSASResourceTypes.parse(resourceTypes).toString(),
        services: AccountSASServices.parse('b').toString(),
      },
      credential,
    ).toString();
  const refused = '403 AuthorizationPermissionMismatch';
  assert.equal(await send(`${endpoint}/made-c?restype=container&${accountSas('c', 'c')}`, 'PUT'), '201', 'Create Container with c');
  assert.equal(await send(`${endpoint}/made-w?restype=container&${accountSas('w', 'c')}`, 'PUT'), '201', 'Create Container with w');
  assert.equal(await send(`${endpoint}/made-r?restype=container&${accountSas('r', 'c')}`, 'PUT'), refused, 'Create Container with r');
  assert.equal(await send(`${endpoint}/made-c?restype=container&${accountSas('r', 'c')}`, 'GET'), '200', 'Get Container Properties with r');
  assert.equal(await send(`${endpoint}/made-c?restype=container&${accountSas('w', 'c')}`, 'GET'), refused, 'Get Container Properties with w');
  assert.equal(await send(`${endpoint}/made-c?restype=container&${accountSas('d', 'o')}`, 'DELETE'), '403 AuthorizationResourceTypeMismatch', 'srt=o');
  assert.equal(await send(`${endpoint}/made-c?restype=container&${accountSas('d', 'c')}`, 'DELETE'), '202', 'Delete Container with d');
  assert.equal(await send(`${endpoint}/?comp=list&${accountSas('l', 's')}`, 'GET'), '200', 'List Containers with l');
  assert.equal(await send(`${endpoint}/?comp=list&${accountSas('r', 's')}`, 'GET'), refused, 'List Containers with r');
  assert.equal(await send(`${endpoint}/made-w/b?${accountSas('c', 'o')}`, 'PUT', { 'x-ms-blob-type': 'BlockBlob' }, 'x'), '201', 'Put Blob with c');
});

/** An account SAS (2020-12-06 string-to-sign) with its fields as given, signed or with the signature changed. */
function accountSasQuery(fields: Record<string, string>, changeSignature: (sig: string) => string = (sig) => sig): string {
  const f: Record<string, string> = {
    sv: '2020-12-06',
    ss: 'b',
    srt: 'sco',
    sp: 'rl',
    se: new Date(Date.now() + 600_000).toISOString().replace(/\.\d+Z$/, 'Z'),
    ...fields,
  };
  const stringToSign = [ACCOUNT, ...['sp', 'ss', 'srt', 'st', 'se', 'sip', 'spr', 'sv', 'ses'].map((name) => f[name] ?? ''), ''].join('\n');
  const sig = signWithDevelopmentKey(stringToSign);
  return new URLSearchParams({ ...f, sig: changeSignature(sig) }).toString();
}

test('every SAS field is read strictly: spr only https or https,http (HTTPS and https,https are refused), sv a real date, sig canonical base64, st/se ISO 8601 UTC, known letters only', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const list = (query: string) => send(`${service.url.replace(/\/$/, '')}/?comp=list&${query}`, 'GET');
  assert.equal(await list(accountSasQuery({})), '200', 'a well-formed SAS');
  assert.equal(await list(accountSasQuery({ spr: 'https,http' })), '200', 'spr=https,http over HTTP');
  assert.equal(await list(accountSasQuery({ spr: 'https' })), '403 AuthorizationProtocolMismatch', 'spr=https over HTTP');
  const malformed: [string, string][] = [
    [accountSasQuery({ spr: 'HTTPS' }), 'spr=HTTPS'],
    [accountSasQuery({ spr: 'https,https' }), 'spr=https,https'],
    [accountSasQuery({ spr: 'http' }), 'spr=http'],
    [accountSasQuery({ spr: 'http,https' }), 'spr=http,https'],
    [accountSasQuery({ sv: '9999-99-99' }), 'sv=9999-99-99'],
    [accountSasQuery({}, (sig) => `${sig}AAAA`), 'sig with junk appended'],
    [accountSasQuery({}, (sig) => `${sig}!!`), 'sig with non-base64 junk appended'],
    [accountSasQuery({}, (sig) => sig.replace(/=+$/, '')), 'sig without its padding'],
    [accountSasQuery({}, (sig) => ` ${sig}`), 'sig with a space'],
    [accountSasQuery({ se: 'Fri, 01 Jan 2100 00:00:00 GMT' }), 'se as an HTTP date'],
    [accountSasQuery({ se: '2100-01-01T00:00:00+01:00' }), 'se with an offset'],
    [accountSasQuery({ st: 'yesterday' }), 'st not a time'],
    [accountSasQuery({ se: '2100-02-30' }), 'se on a day that does not exist'],
    [accountSasQuery({ sp: 'rlz' }), 'sp with an unknown letter'],
    [accountSasQuery({ sp: 'r,l' }), 'sp with a comma'],
    [accountSasQuery({ srt: 'scox' }), 'srt with an unknown letter'],
    [accountSasQuery({ ss: 'b!' }), 'ss with junk'],
  ];
  for (const [query, label] of malformed) assert.equal(await list(query), '403 AuthenticationFailed', label);
});
