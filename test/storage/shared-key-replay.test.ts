/**
 * A Shared Key signature binds the request it was made for: replayed with its query or
 * Host changed, it does not act on anything else. Requests are signed here, a second
 * implementation of the documented string-to-sign beside the server's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { request } from 'node:http';
import { DEVELOPMENT_KEY } from '../../src/storage/persistence/accounts.ts';
import { startSharedKeyStorage } from './helpers.ts';

const ACCOUNT = 'devstoreaccount1';

/**
 * Signs `method path?query` (path style: the path starts with the account) as the SDK does:
 * query names in lower case, sorted, the values of a repeated name sorted and joined by commas.
 */
function signed(method: string, path: string, query: [string, string][], body = ''): { url: string; headers: Record<string, string> } {
  const headers: Record<string, string> = { 'x-ms-date': new Date().toUTCString(), 'x-ms-version': '2025-01-05' };
  if (method === 'PUT') headers['x-ms-blob-type'] = 'BlockBlob';
  const values = new Map<string, string[]>();
  for (const [name, value] of query) values.set(name.toLowerCase(), [...(values.get(name.toLowerCase()) ?? []), value]);
  const resource = [...values.keys()].sort().map((name) => `\n${name}:${values.get(name)!.sort().join(',')}`);
  const standard = [method, '', '', body.length ? String(body.length) : '', '', '', '', '', '', '', '', ''].join('\n');
  const canonicalHeaders = Object.keys(headers)
    .sort()
    .map((name) => `${name}:${headers[name]}\n`)
    .join('');
  const stringToSign = `${standard}\n${canonicalHeaders}/${ACCOUNT}${path}${resource.join('')}`;
  const signature = createHmac('sha256', Buffer.from(DEVELOPMENT_KEY, 'base64')).update(stringToSign).digest('base64');
  return { url: `${path}?${new URLSearchParams(query).toString()}`, headers: { ...headers, authorization: `SharedKey ${ACCOUNT}:${signature}` } };
}

/** Sends a request with the Host header given (fetch cannot set it). */
function send(origin: string, method: string, pathAndQuery: string, headers: Record<string, string>, body = ''): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const sent = request({ hostname, port, method, path: pathAndQuery, headers: { ...headers, 'content-length': String(body.length) } }, (answer) => {
      let text = '';
      answer.setEncoding('utf8');
      answer.on('data', (chunk: string) => (text += chunk));
      answer.on('end', () => resolve({ status: answer.statusCode ?? 0, body: text }));
    });
    sent.on('error', reject);
    sent.end(body);
  });
}

test('Shared Key signs a repeated query parameter as the service does (values sorted, joined by commas), and the listing acts on that same value', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const origin = new URL(service.url).origin;
  const box = service.getContainerClient('box');
  await box.create();
  await box.getBlockBlobClient('public/a').upload('a', 1);
  await box.getBlockBlobClient('secret/b').upload('b', 1);

  const list = [
    ['restype', 'container'],
    ['comp', 'list'],
  ] as [string, string][];
  const legit = signed('GET', `/${ACCOUNT}/box`, [...list, ['prefix', 'public/']]);
  const served = await send(origin, 'GET', legit.url, legit.headers);
  assert.equal(served.status, 200);
  assert.match(served.body, /public\/a/);
  assert.doesNotMatch(served.body, /secret/);

  // The same signature, replayed with an empty prefix before the signed one.
  const replayed = await send(origin, 'GET', `/${ACCOUNT}/box?restype=container&comp=list&prefix=&prefix=public%2F`, legit.headers);
  assert.equal(replayed.status, 403, 'the replay does not verify');
  assert.doesNotMatch(replayed.body, /secret\/b/);

  // Signed with both values, the listing uses what was signed: the prefix ",public/", which no blob has.
  const both = signed('GET', `/${ACCOUNT}/box`, [...list, ['prefix', ''], ['prefix', 'public/']]);
  const answer = await send(origin, 'GET', both.url, both.headers);
  assert.equal(answer.status, 200);
  assert.match(answer.body, /<Prefix>,public\/<\/Prefix>/);
  assert.doesNotMatch(answer.body, /<Name>/, 'no blob starts with the joined prefix');
});

test('Shared Key: a path-style request replayed with a host-style Host does not reach a container named like the account', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const origin = new URL(service.url).origin;
  await service.getContainerClient(ACCOUNT).create();
  await service.getContainerClient('box').create();

  const put = signed('PUT', `/${ACCOUNT}/box/b`, [], 'hello');
  assert.equal((await send(origin, 'PUT', put.url, put.headers, 'hello')).status, 201, 'path style, as signed');
  const replayed = await send(origin, 'PUT', put.url, { ...put.headers, host: `${ACCOUNT}.blob.localhost` }, 'hello');
  assert.equal(replayed.status, 400, 'host style with the account again in the path is refused');
  assert.match(replayed.body, /<Code>InvalidUri<\/Code>/);
  const inAccountNamedContainer: string[] = [];
  for await (const blob of service.getContainerClient(ACCOUNT).listBlobsFlat()) inAccountNamedContainer.push(blob.name);
  assert.deepEqual(inAccountNamedContainer, [], `nothing was written into the container named ${ACCOUNT}`);
});
