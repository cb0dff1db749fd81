import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readdir, readFile } from 'node:fs/promises';
import { createHmac } from 'node:crypto';
import { join } from 'node:path';
import { generateKeyPair, SignJWT } from 'jose';
import { XMLParser } from 'fast-xml-parser';
import { createUserAssignedIdentity } from '../../src/identity/manage.ts';
import { suiteCleanup } from '../identity/helpers.ts';
import { debianProgram } from '../helpers/index.ts';
import { NEWEST_VERSION } from '../../src/storage/authentication/versions.ts';
import { startStorageStack, type StorageStack } from './helpers.ts';

const cleanup = suiteCleanup(after);
let stack: StorageStack;
let token: string;
const V = { 'x-ms-version': '2017-11-09' };

before(async () => {
  stack = await startStorageStack(cleanup);
  token = await stack.imdsToken();
  for (const name of ['alpha', 'beta']) {
    const created = await stack.get(`/${name}?restype=container`, { authorization: `Bearer ${token}`, ...V }, 'PUT');
    assert.equal(created.status, 201);
  }
});

const xml = new XMLParser({ ignoreAttributes: false });

function errorCode(answer: { headers: Record<string, unknown>; body: string }): { header: unknown; code: unknown; detail: unknown } {
  const parsed = answer.body ? (xml.parse(answer.body) as { Error?: { Code?: string; AuthenticationErrorDetail?: string } }) : {};
  return { header: answer.headers['x-ms-error-code'], code: parsed.Error?.Code, detail: parsed.Error?.AuthenticationErrorDetail };
}

test('R-BLOB-1 curl: GET /?comp=list with Authorization: Bearer and x-ms-version 2017-11-09 lists the container names as XML', async () => {
  const curl = debianProgram('curl', '/usr/bin/curl');
  const { stdout } = await promisify(execFile)(curl, [
    '-sS',
    '--cacert',
    stack.identity.caCertPath,
    '-H',
    `Authorization: Bearer ${token}`,
    '-H',
    'x-ms-version: 2017-11-09',
    '-D',
    '-',
    `${stack.blobEndpoint}/?comp=list`,
  ]);
  const [head, body] = stdout.split('\r\n\r\n');
  assert.match(head!, /^HTTP\/1\.1 200/);
  assert.match(head!, /content-type: application\/xml/i);
  assert.match(head!, /x-ms-version: 2017-11-09/i);
  assert.match(head!, /x-ms-request-id: [0-9a-f-]{36}/i);
  const parsed = xml.parse(body!) as {
    EnumerationResults: { '@_ServiceEndpoint': string; Containers: { Container: { Name: string; Properties: { Etag: string } }[] } };
  };
  assert.equal(parsed.EnumerationResults['@_ServiceEndpoint'], stack.blobEndpoint);
  assert.deepEqual(
    parsed.EnumerationResults.Containers.Container.map((c) => c.Name),
    ['alpha', 'beta'],
  );
  assert.match(parsed.EnumerationResults.Containers.Container[0]!.Properties.Etag, /^"0x[0-9A-F]+"$/);
});

test('R-BLOB-1 x-ms-version is required with a bearer token, accepted from 2017-11-09 up to any later date, and echoed', async () => {
  const auth = { authorization: `Bearer ${token}` };
  const missing = await stack.get('/?comp=list', auth);
  assert.equal(missing.status, 400);
  assert.equal(errorCode(missing).header, 'MissingRequiredHeader');
  for (const bad of ['2015-04-05', 'latest', '2026-13-01', '2026-02-30', '26-04-06', '2026-04-06x']) {
    const answer = await stack.get('/?comp=list', { ...auth, 'x-ms-version': bad });
    assert.equal(answer.status, 400, bad);
    assert.equal(errorCode(answer).code, 'InvalidHeaderValue');
    assert.match(answer.body, /<HeaderName>x-ms-version<\/HeaderName>/);
  }
  for (const version of ['2017-11-09', '2021-08-06', '2026-04-06', NEWEST_VERSION]) {
    const answer = await stack.get('/?comp=list', { ...auth, 'x-ms-version': version, 'x-ms-client-request-id': 'abc-123' });
    assert.equal(answer.status, 200, version);
    assert.equal(answer.headers['x-ms-version'], version);
    assert.equal(answer.headers['x-ms-client-request-id'], 'abc-123');
  }
  // A release newer than this server knows is served as the newest version it knows.
  const future = await stack.get('/?comp=list', { ...auth, 'x-ms-version': '2099-01-01' });
  assert.equal(future.status, 200);
  assert.equal(future.headers['x-ms-version'], NEWEST_VERSION);
});

test('R-BLOB-2 no token → 401 with the unquoted challenge the SDK parses; not Bearer → 400 InvalidAuthenticationInfo', async () => {
  const none = await stack.get('/?comp=list', V);
  assert.equal(none.status, 401);
  assert.equal(errorCode(none).code, 'NoAuthenticationInformation');
  const challenge = String(none.headers['www-authenticate']);
  assert.equal(
    challenge,
    `Bearer authorization_uri=https://login.microsoftonline.com/${stack.identity.tenantId}/oauth2/authorize resource_id=https://storage.azure.com`,
  );
  // The SDK's parser: split on spaces, then on '=': every value must be a plain token, the URI a valid URL.
  const parts = Object.fromEntries(
    challenge
      .slice('Bearer '.length)
      .split(' ')
      .map((p) => p.split('=')),
  );
  assert.equal(new URL(parts.authorization_uri).pathname.split('/')[1], stack.identity.tenantId);
  const basic = await stack.get('/?comp=list', { ...V, authorization: 'Basic dXNlcjpwYXNz' });
  assert.equal(basic.status, 400);
  assert.equal(errorCode(basic).code, 'InvalidAuthenticationInfo');
});

test('R-BLOB-2 tokens for another audience, expired, of another issuer, foreign-signed or not JWTs → 403 AuthenticationFailed with the detail', async () => {
  const managementToken = await stack.imdsToken('https://management.azure.com');
  const foreign = await generateKeyPair('RS256');
  const now = Math.floor(Date.now() / 1000);
  const foreignToken = await new SignJWT({
    aud: 'https://storage.azure.com',
    iss: `https://sts.windows.net/${stack.identity.tenantId}/`,
    tid: stack.identity.tenantId,
    oid: 'x',
    iat: now,
    nbf: now,
    exp: now + 600,
  })
    .setProtectedHeader({ alg: 'RS256', kid: 'foreign' })
    .sign(foreign.privateKey);
  const cases: [string, string, RegExp][] = [
    ['another audience', managementToken, /^Invalid token audience\.$/],
    ['expired', await stack.forgeToken({ exp: now - 3600, nbf: now - 7200, iat: now - 7200 }), /^Lifetime validation failed\. The token is expired\.$/],
    ['another issuer', await stack.forgeToken({ iss: 'https://sts.windows.net/00000000-0000-0000-0000-000000000000/' }), /^Invalid token issuer\.$/],
    ['foreign signature', foreignToken, /key this issuer does not publish/],
    ['not a JWT', 'abc.def', /^Authentication scheme Bearer is not supported\.$/],
    ['alg none', `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{}').toString('base64url')}.`, /not supported|RS256/],
  ];
  for (const [label, bad, detail] of cases) {
    const answer = await stack.get('/?comp=list', { ...V, authorization: `Bearer ${bad}` });
    assert.equal(answer.status, 403, label);
    const e = errorCode(answer);
    assert.equal(e.header, 'AuthenticationFailed', label);
    assert.equal(e.code, 'AuthenticationFailed', label);
    assert.match(String(e.detail), detail, label);
  }
});

test('R-BLOB-2 a valid storage token of an identity without a data role → 403 AuthorizationPermissionMismatch', async () => {
  const identity = await stack.identity.change((d) => createUserAssignedIdentity(d, 'no-data-role'));
  const roleless = await stack.imdsToken('https://storage.azure.com', identity.clientId);
  const answer = await stack.get('/?comp=list', { ...V, authorization: `Bearer ${roleless}` });
  assert.equal(answer.status, 403);
  assert.equal(errorCode(answer).code, 'AuthorizationPermissionMismatch');
});

test('bearer tokens over plain HTTP are refused with the service message', async () => {
  const httpUrl = stack.storage.urls.find((u) => u.url.startsWith('http:'))!.url;
  const { request } = await import('undici');
  const answer = await request(`${httpUrl}/?comp=list`, { headers: { ...V, authorization: `Bearer ${token}` } });
  const body = await answer.body.text();
  assert.equal(answer.statusCode, 403);
  assert.equal(errorCode({ headers: answer.headers, body }).detail, 'Authentication scheme Bearer is not allowed with HTTP.');
});

test('HEAD errors carry x-ms-error-code and no body; GET ranges answer 206 with Content-Range; bad ranges 416', async () => {
  const auth = { ...V, authorization: `Bearer ${token}` };
  const missing = await stack.get('/alpha/nothing-here', auth, 'HEAD');
  assert.equal(missing.status, 404);
  assert.equal(missing.headers['x-ms-error-code'], 'BlobNotFound');
  assert.equal(missing.body, '');
  const { request } = await import('undici');
  const put = await request(`${stack.blobEndpoint}/alpha/r.txt`, {
    method: 'PUT',
    dispatcher: stack.identity.dispatcher,
    headers: { ...auth, 'x-ms-blob-type': 'BlockBlob', 'content-type': 'text/plain' },
    body: '0123456789',
  });
  await put.body.dump();
  assert.equal(put.statusCode, 201);
  assert.equal(put.headers['content-md5'], 'eB5eJF1ptWaXm4bijSPyxw==');
  const ranged = await stack.get('/alpha/r.txt', { ...auth, 'x-ms-range': 'bytes=2-5' });
  assert.equal(ranged.status, 206);
  assert.equal(ranged.body, '2345');
  assert.equal(ranged.headers['content-range'], 'bytes 2-5/10');
  const beyond = await stack.get('/alpha/r.txt', { ...auth, range: 'bytes=20-' });
  assert.equal(beyond.status, 416);
  const etag = String(ranged.headers.etag);
  assert.equal((await stack.get('/alpha/r.txt', { ...auth, 'if-match': '"0xBAD"' })).status, 412);
  assert.equal((await stack.get('/alpha/r.txt', { ...auth, 'if-match': etag })).status, 200);
});

test('fuzz: bad container names, path tricks in blob names, broken encodings, huge headers → clean errors; nothing escapes the data dir; the server keeps serving', async () => {
  const auth = { ...V, authorization: `Bearer ${token}` };
  for (const name of ['ab', 'UPPER', 'a--b', '-ab', 'a'.repeat(64), 'sp%20ace']) {
    const answer = await stack.get(`/${name}?restype=container`, auth, 'PUT');
    assert.equal(answer.status, 400, name);
    assert.equal(errorCode(answer).code, 'InvalidResourceName', name);
  }
  const { request } = await import('undici');
  const tricky = '../../../../etc/offcloud-escape';
  const put = await request(`${stack.blobEndpoint}/alpha/${encodeURIComponent(tricky)}`, {
    method: 'PUT',
    dispatcher: stack.identity.dispatcher,
    headers: { ...auth, 'x-ms-blob-type': 'BlockBlob' },
    body: 'contained',
  });
  const refused = { status: put.statusCode, headers: put.headers, body: await put.body.text() };
  assert.equal(refused.status, 400, 'a name with dot segments is refused (names.test.ts tries many more)');
  assert.equal(errorCode(refused).code, 'InvalidResourceName');
  const listed = await stack.get('/alpha?restype=container&comp=list', auth);
  assert.ok(!listed.body.includes('offcloud-escape'), 'nothing was stored under it');
  assert.equal((await stack.get(`/alpha/${encodeURIComponent(tricky)}`, auth)).status, 400);
  const dataFiles = await readdir(join(stack.dataDir, 'storage', 'accounts', 'devstoreaccount1', 'alpha', 'data'));
  assert.ok(
    dataFiles.every((f) => /^[0-9a-f-]{36}$/.test(f)),
    'blob bytes live under random ids only',
  );
  await assert.rejects(readdir('/etc/offcloud-escape'));

  const cases: [string, Record<string, string>, number][] = [
    ['/alpha/%E0%A4%A', auth, 400],
    ['/alpha?restype=container&comp=list&maxresults=0', auth, 400],
    ['/alpha?restype=container&comp=list&maxresults=abc', auth, 400],
    ['/alpha/x?comp=block&blockid=@@@', auth, 400],
    ['/nosuchaccount/?comp=list', auth, 400],
    ['/?comp=bogus', auth, 400],
    ['/alpha/big', { ...auth, 'x-huge': 'a'.repeat(20000) }, 431],
  ];
  for (const [path, headers, status] of cases) {
    const url = path.startsWith('/nosuchaccount') ? stack.blobEndpoint.replace('/devstoreaccount1', '') + path : stack.blobEndpoint + path;
    const answer = await request(url, { dispatcher: stack.identity.dispatcher, headers });
    const body = await answer.body.text();
    assert.equal(answer.statusCode, status, path);
    if (status !== 431) assert.equal(answer.headers['x-ms-error-code'], errorCode({ headers: answer.headers, body }).code, path);
  }
  const stillThere = await stack.get('/?comp=list', auth);
  assert.equal(stillThere.status, 200);
  assert.ok(stillThere.body.includes('<Name>alpha</Name>'));
});

/** Signs List Containers with the account key as the documented Shared Key scheme says (written here, apart from the server's code). */
async function sharedKeyListing(dates: { 'x-ms-date'?: string; date?: string }): Promise<{ status: number; detail: unknown }> {
  const accounts = JSON.parse(await readFile(join(stack.dataDir, 'storage', 'accounts.json'), 'utf8')) as { accounts: { name: string; keys: string[] }[] };
  const key = accounts.accounts.find((a) => a.name === 'devstoreaccount1')!.keys[0]!;
  const headers: Record<string, string> = { 'x-ms-version': '2026-04-06', ...dates };
  const canonicalHeaders = Object.keys(headers)
    .filter((name) => name.startsWith('x-ms-'))
    .sort()
    .map((name) => `${name}:${headers[name]}\n`)
    .join('');
  const stringToSign = `GET\n\n\n\n\n\n${dates.date ?? ''}\n\n\n\n\n\n${canonicalHeaders}/devstoreaccount1/devstoreaccount1/\ncomp:list`;
  const signature = createHmac('sha256', Buffer.from(key, 'base64')).update(stringToSign).digest('base64');
  const answer = await stack.get('/?comp=list', { ...headers, authorization: `SharedKey devstoreaccount1:${signature}` });
  return { status: answer.status, detail: errorCode(answer).detail };
}

test('Shared Key requests must carry a date within 15 minutes: a captured request cannot be replayed later', async () => {
  const at = (offsetMinutes: number) => new Date(Date.now() + offsetMinutes * 60_000).toUTCString();
  assert.equal((await sharedKeyListing({ 'x-ms-date': at(0) })).status, 200, 'a fresh signed request is served');
  assert.equal((await sharedKeyListing({ date: at(-1) })).status, 200, 'the Date header stands in for x-ms-date');
  for (const [dates, detail] of [
    [{}, /^Request date header not specified/],
    [{ 'x-ms-date': at(-20) }, /^Request date header too old/],
    [{ 'x-ms-date': 'Thu, 01 Jan 1970 00:00:00 GMT' }, /^Request date header too old/],
    [{ 'x-ms-date': 'Thu, 01 Jan 2099 00:00:00 GMT' }, /^Request date header too far in the future/],
    [{ 'x-ms-date': at(16) }, /^Request date header too far in the future/],
    [{ 'x-ms-date': 'garbage' }, /not a valid HTTP date/],
    [{ date: at(-30) }, /^Request date header too old/],
  ] as const) {
    const answer = await sharedKeyListing(dates);
    assert.equal(answer.status, 403, JSON.stringify(dates));
    assert.match(String(answer.detail), detail, JSON.stringify(dates));
  }
});

test('broken percent-encoding anywhere in a path answers the storage XML error with x-ms-error-code, over HTTPS and HTTP', async () => {
  const { request } = await import('undici');
  const httpUrl = stack.storage.urls.find((u) => u.url.startsWith('http:'))!.url;
  const origin = (endpoint: string) => endpoint.replace('/devstoreaccount1', '');
  for (const base of [stack.blobEndpoint, httpUrl]) {
    for (const path of [
      '/devstoreaccount1/alpha/%zz',
      '/devstoreaccount1/alpha/a%',
      '/devstoreaccount1/al%ZZpha?restype=container',
      '/%zz/alpha',
      '/devstoreaccount1/alpha/%E0%A4%A',
      '/devstoreaccount1/alpha/%C0%AF?comp=list',
    ]) {
      const answer = await request(origin(base) + path, {
        method: 'GET',
        headers: V,
        ...(base.startsWith('https') ? { dispatcher: stack.identity.dispatcher } : {}),
      });
      const body = await answer.body.text();
      assert.equal(answer.statusCode, 400, path);
      assert.match(String(answer.headers['content-type']), /xml/, path);
      const { header, code } = errorCode({ headers: answer.headers, body });
      assert.equal(header, 'InvalidUri', path);
      assert.equal(code, 'InvalidUri', path);
    }
  }
  assert.equal((await stack.get('/?comp=list', { ...V, authorization: `Bearer ${token}` })).status, 200, 'still serving');
});
