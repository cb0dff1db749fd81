import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createClient, assignDataRole } from '../../src/identity/manage.ts';
import { ensureLocalCa } from '../../src/common/ca.ts';
import { suiteCleanup } from '../identity/helpers.ts';
import { runSdkScenario, startStorageStack, type StorageStack } from './helpers.ts';

let stack: StorageStack;
const cleanup = suiteCleanup(after);
before(async () => {
  stack = await startStorageStack(cleanup);
});

test('R-BLOB-1 R-BLOB-2 the official storage SDK with ManagedIdentityCredential: containers, blobs, blocks, ranges, paging', async () => {
  const seen = await runSdkScenario(stack, { SCENARIO: 'full', SCENARIO_CREDENTIAL: 'managed-identity', SCENARIO_PREFIX: 'mi' });
  assert.equal(seen.ok, true, JSON.stringify(seen.error));
  const r = seen.result!;
  assert.deepEqual(r.created, ['created', 'created', 'created']);
  assert.deepEqual(r.createIfNotExists, { succeeded: false, errorCode: 'ContainerAlreadyExists' });
  assert.deepEqual(r.pages, [['mi-a'], ['mi-b'], ['mi-c']], 'byPage({maxPageSize:1}) follows NextMarker to the end');
  assert.deepEqual(r.withMetadata, {
    'mi-a': { metadata: { purpose: 'testa' }, etagQuoted: true, lastModifiedIsDate: true },
    'mi-b': { metadata: { purpose: 'testb' }, etagQuoted: true, lastModifiedIsDate: true },
    'mi-c': { metadata: { purpose: 'testc' }, etagQuoted: true, lastModifiedIsDate: true },
  });
  assert.equal(r.helloBuffer, 'hello world');
  assert.equal(r.downloaded, 'hello world');
  assert.equal(r.contentLength, 11);
  assert.equal(r.rangedEqual, true, 'uploadData in 1 KiB blocks, downloadToBuffer in 1000-byte ranges, byte for byte');
  assert.equal(r.partialEqual, true);
  assert.deepEqual(r.exists, [true, false]);
  assert.deepEqual(r.flatPages, [['big.bin'], ['dir/hello.txt']]);
  assert.deepEqual(r.byPrefix, ['dir/hello.txt']);
  assert.deepEqual(r.hierarchy, ['prefix:dir/', 'big.bin']);
  assert.equal(r.afterDelete, false);
  assert.deepEqual(r.missingContainer, { statusCode: 404, code: 'ContainerNotFound' });
  assert.equal(r.deletedStatus, 202);
  assert.deepEqual(r.remaining, ['mi-a', 'mi-b']);
});

test('R-BLOB-2 the SDK with ClientSecretCredential, and Shared Key from the account key', async () => {
  const { client, secret } = await stack.identity.change((d) => {
    const made = createClient(d, { displayName: 'storage-writer' });
    assignDataRole(d, made.client.appId, 'Storage Blob Data Contributor', '/storage/devstoreaccount1');
    return made;
  });
  const bySecret = await runSdkScenario(stack, {
    SCENARIO: 'full',
    SCENARIO_CREDENTIAL: 'client-secret',
    SCENARIO_PREFIX: 'cs',
    CLIENT_ID: client.appId,
    CLIENT_SECRET: secret,
  });
  assert.equal(bySecret.ok, true, JSON.stringify(bySecret.error));
  assert.deepEqual(bySecret.result!.pages, [['cs-a'], ['cs-b'], ['cs-c']]);

  const key = stack.storage.facts!.storage!.accountKey;
  const byKey = await runSdkScenario(stack, {
    SCENARIO: 'full',
    SCENARIO_CREDENTIAL: 'shared-key',
    SCENARIO_PREFIX: 'sk',
    ACCOUNT_NAME: 'devstoreaccount1',
    ACCOUNT_KEY: key,
  });
  assert.equal(byKey.ok, true, JSON.stringify(byKey.error));
  assert.equal(byKey.result!.rangedEqual, true);
  const wrongKey = await runSdkScenario(stack, {
    SCENARIO: 'listOnly',
    SCENARIO_CREDENTIAL: 'shared-key',
    SCENARIO_PREFIX: 'sk',
    ACCOUNT_NAME: 'devstoreaccount1',
    ACCOUNT_KEY: Buffer.alloc(64, 7).toString('base64'),
  });
  assert.deepEqual(wrongKey.result, { list: { statusCode: 403, code: 'AuthenticationFailed' }, create: { statusCode: 403, code: 'AuthenticationFailed' } });
});

test('R-BLOB-2 a principal with Storage Blob Data Reader lists but cannot write; one without a data role gets AuthorizationPermissionMismatch', async () => {
  const { reader, nobody } = await stack.identity.change((d) => {
    const r = createClient(d, { displayName: 'storage-reader' });
    assignDataRole(d, r.client.appId, 'Storage Blob Data Reader', '/storage/devstoreaccount1');
    const n = createClient(d, { displayName: 'storage-nobody' });
    return { reader: r, nobody: n };
  });
  const asReader = await runSdkScenario(stack, {
    SCENARIO: 'listOnly',
    SCENARIO_CREDENTIAL: 'client-secret',
    SCENARIO_PREFIX: 'rd',
    CLIENT_ID: reader.client.appId,
    CLIENT_SECRET: reader.secret,
  });
  assert.deepEqual(asReader.result, { list: null, create: { statusCode: 403, code: 'AuthorizationPermissionMismatch' } });
  const asNobody = await runSdkScenario(stack, {
    SCENARIO: 'listOnly',
    SCENARIO_CREDENTIAL: 'client-secret',
    SCENARIO_PREFIX: 'nb',
    CLIENT_ID: nobody.client.appId,
    CLIENT_SECRET: nobody.secret,
  });
  assert.deepEqual(asNobody.result, {
    list: { statusCode: 403, code: 'AuthorizationPermissionMismatch' },
    create: { statusCode: 403, code: 'AuthorizationPermissionMismatch' },
  });
});

test('R-BLOB-2 a request that reaches storage without a token gets the 401 challenge, and the SDK follows it once with a new token', async (t) => {
  const { client, secret } = await stack.identity.change((d) => {
    const made = createClient(d, { displayName: 'challenged' });
    assignDataRole(d, made.client.appId, 'Storage Blob Data Reader', '/storage/devstoreaccount1');
    return made;
  });
  // An HTTPS hop in front of storage that drops the Authorization header of the first request,
  // as a proxy that strips credentials would: storage must challenge, the SDK must answer it.
  const ca = await ensureLocalCa(stack.dataDir);
  const target = new URL(stack.blobEndpoint);
  const seen: { authorized: boolean; status: number }[] = [];
  const hop = createHttpsServer({ cert: ca.cert, key: ca.key }, (req, res) => {
    const headers = { ...req.headers, host: target.host };
    if (seen.length === 0) delete headers.authorization;
    const upstream = httpsRequest({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers, ca: ca.caCert }, (answer) => {
      seen.push({ authorized: Boolean(headers.authorization), status: answer.statusCode ?? 0 });
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => hop.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => hop.close(resolve)));
  const hopEndpoint = `https://127.0.0.1:${(hop.address() as AddressInfo).port}/devstoreaccount1`;
  const outcome = await runSdkScenario(
    { ...stack, blobEndpoint: hopEndpoint },
    { SCENARIO: 'listOnly', SCENARIO_CREDENTIAL: 'client-secret', SCENARIO_PREFIX: 'ch', CLIENT_ID: client.appId, CLIENT_SECRET: secret },
  );
  assert.equal(outcome.ok, true, JSON.stringify(outcome.error));
  assert.equal((outcome.result as { list: unknown }).list, null, 'the listing succeeded after the challenge');
  assert.deepEqual(seen.slice(0, 2), [
    { authorized: false, status: 401 },
    { authorized: true, status: 200 },
  ]);
});
