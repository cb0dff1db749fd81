/**
 * Blob names that try to leave their container or the data directory: dot segments (raw,
 * percent-encoded, behind encoded slashes or backslashes), NUL and other control
 * characters, broken UTF-8, over-long names. They are sent raw (node:http keeps the path
 * as written; curl --path-as-is as a second witness) and through the SDK, with a SAS for
 * the container `alpha` only. Every answer is the service's, blobs stored before are
 * still there, and no file appears anywhere but in the containers' own folders.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { BlobServiceClient, ContainerSASPermissions, generateBlobSASQueryParameters, StorageSharedKeyCredential } from '@azure/storage-blob';
import { startStorage } from '../../src/storage/server.ts';
import { DEVELOPMENT_KEY } from '../../src/storage/persistence/accounts.ts';
import { tempDataDir } from '../helpers/index.ts';

const VERSION = { 'x-ms-version': '2026-04-06' };

interface RawAnswer {
  status: number;
  errorCode: string | undefined;
  body: string;
}

/** Sends a request with its path exactly as written (node:http neither resolves nor re-encodes it). */
function raw(base: URL, method: string, path: string, headers: Record<string, string>, body = ''): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: base.hostname, port: base.port, method, path, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const code = res.headers['x-ms-error-code'];
          resolve({ status: res.statusCode ?? 0, errorCode: Array.isArray(code) ? code[0] : code, body: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** An error answer in the service's shape: x-ms-error-code and the XML body's <Code> agree. */
function assertServiceError(answer: RawAnswer, context: string): void {
  assert.ok(answer.status >= 400 && answer.status < 500, `${context}: ${answer.status} ${answer.body}`);
  assert.ok(answer.errorCode, `${context}: x-ms-error-code`);
  if (answer.body) assert.match(answer.body, new RegExp(`<Code>${answer.errorCode}</Code>`), context);
}

/** Every file under `dir`, as paths relative to it. */
async function filesUnder(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) found.push(relative(dir, join(entry.parentPath, entry.name)));
  }
  return found.sort();
}

/** The writes a name is tried with: Put Blob, Put Block, Put Block List, an append blob, then a read and a delete. */
const ATTEMPTS: { method: string; query: string; headers: Record<string, string>; body: string }[] = [
  { method: 'PUT', query: '', headers: { 'x-ms-blob-type': 'BlockBlob' }, body: 'attack' },
  { method: 'PUT', query: '&comp=block&blockid=YQ%3D%3D', headers: {}, body: 'attack' },
  { method: 'PUT', query: '&comp=blocklist', headers: {}, body: '<?xml version="1.0" encoding="utf-8"?><BlockList><Latest>YQ==</Latest></BlockList>' },
  { method: 'PUT', query: '', headers: { 'x-ms-blob-type': 'AppendBlob' }, body: '' },
  { method: 'GET', query: '', headers: {}, body: '' },
  { method: 'DELETE', query: '', headers: {}, body: '' },
];

/** Names (as written after `/devstoreaccount1/alpha/`) and the error every attempt on them gets. */
const REFUSED: [string, number, string][] = [
  // Dot segments the URL resolves: above the account (an account named `victim`), or into another container.
  ['../../victim', 400, 'InvalidUri'],
  ['%2e%2E/%2E%2e/victim', 400, 'InvalidUri'],
  ['.%2e/..%2E/../../../../etc/offcloud-escape', 400, 'InvalidUri'],
  ['../beta/victim', 403, 'AuthenticationFailed'],
  ['./../beta/victim', 403, 'AuthenticationFailed'],
  ['%2E%2E', 403, 'AuthorizationResourceTypeMismatch'],
  // Dot segments behind encoded separators survive the URL: the name is refused.
  ['..%2F..%2Fvictim', 400, 'InvalidResourceName'],
  ['%2E%2E%2F%2E%2E%2Fvictim', 400, 'InvalidResourceName'],
  ['..%2f..%2f..%2f..%2fetc%2foffcloud-escape', 400, 'InvalidResourceName'],
  ['sub%2F..%2Fvictim', 400, 'InvalidResourceName'],
  ['..%5C..%5Cvictim', 400, 'InvalidResourceName'],
  ['..\\..\\victim', 400, 'InvalidResourceName'],
  ['sub\\.\\victim', 400, 'InvalidResourceName'],
  // Control characters, NUL first.
  ['%00victim', 400, 'InvalidResourceName'],
  ['victim%00.txt', 400, 'InvalidResourceName'],
  ['line%0Abreak', 400, 'InvalidResourceName'],
  ['del%7F', 400, 'InvalidResourceName'],
  ['c1%C2%81', 400, 'InvalidResourceName'],
  // Broken or overlong UTF-8 (an overlong `..`), a lone `%`.
  ['%C0%AE%C0%AE%2Fvictim', 400, 'InvalidUri'],
  ['%E0%A4%A', 400, 'InvalidUri'],
  ['100%', 400, 'InvalidUri'],
  // Too long, too many segments, a folder.
  ['n'.repeat(1025), 400, 'InvalidResourceName'],
  [`${'s/'.repeat(254)}x`, 400, 'InvalidResourceName'],
  ['folder/', 400, 'InvalidResourceName'],
];

/** Pieces the random names are made of: separators, dots and escapes of both, NUL, a stray `%`. */
const PIECES = ['..', '.', '/', '%2F', '%2f', '%5C', '\\', '%2E', '%2e%2e', '%00', '%', 'x', 'etc', 'tmp', '%25', '~', '%20'];

test('path tricks in blob names (raw, encoded, backslashes, NUL, control characters, random mixes) get the service errors; nothing stored is lost or written outside', async (t) => {
  const root = await tempDataDir(t);
  const dataDir = join(root, 'data');
  await mkdir(dataDir);
  await writeFile(join(root, 'victim'), 'beside the data dir');
  const storage = await startStorage({ dataDir, port: 0, httpsPort: 0, logLevel: 'silent' });
  t.after(() => storage.close());
  const endpoint = storage.facts!.storage!.httpBlobEndpoint;
  const base = new URL(endpoint);
  const credential = new StorageSharedKeyCredential('devstoreaccount1', DEVELOPMENT_KEY);
  const service = new BlobServiceClient(endpoint, credential);
  for (const name of ['alpha', 'beta']) {
    await service.getContainerClient(name).create();
    await service.getContainerClient(name).getBlockBlobClient('victim').upload(`victim in ${name}`, `victim in ${name}`.length);
  }
  const storageDir = join(dataDir, 'storage');
  const outsideBefore = (await filesUnder(root)).filter((f) => !f.startsWith(join('data', 'storage')));

  // The attacker holds a SAS for `alpha` only.
  const sas = generateBlobSASQueryParameters(
    { containerName: 'alpha', permissions: ContainerSASPermissions.parse('racwdl'), expiresOn: new Date(Date.now() + 3_600_000) },
    credential,
  ).toString();
  const prefix = `${base.pathname}/alpha/`;
  for (const [name, status, code] of REFUSED) {
    for (const attempt of ATTEMPTS) {
      const answer = await raw(base, attempt.method, `${prefix}${name}?${sas}${attempt.query}`, { ...VERSION, ...attempt.headers }, attempt.body);
      const context = `${attempt.method} ${name}${attempt.query}`;
      assertServiceError(answer, context);
      assert.equal(answer.status, status, context);
      assert.equal(answer.errorCode, code, context);
    }
  }

  // curl, a second client that can send a path as written.
  const curl = async (path: string) => {
    const { stdout } = await promisify(execFile)('curl', [
      '-s',
      '--path-as-is',
      '-X',
      'PUT',
      '-H',
      'x-ms-blob-type: BlockBlob',
      '-H',
      'x-ms-version: 2026-04-06',
      '--data-binary',
      'attack by curl',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      `${base.origin}${path}`,
    ]);
    return stdout;
  };
  assert.equal(await curl(`${prefix}../../victim?${sas}`), '400');
  assert.equal(await curl(`${prefix}..%2F..%2F..%2Fvictim?${sas}`), '400');
  assert.equal(await curl(`${prefix}%2e%2e/%2e%2e/%2e%2e/victim?${sas}`), '400');

  // Random mixes of the pieces (seeded, so a failure names what it sent): a name is refused with
  // the service's error or stored under what it names, and reads back as written.
  let seed = 0x31;
  const next = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const accepted: string[] = [];
  for (let i = 0; i < 150; i++) {
    const name = `fz${Array.from({ length: 1 + next(8) }, () => PIECES[next(PIECES.length)]).join('')}`;
    const path = `${prefix}${name}?${sas}`;
    const put = await raw(base, 'PUT', path, { ...VERSION, 'x-ms-blob-type': 'BlockBlob' }, `random ${i}`);
    if (put.status === 201) {
      accepted.push(name);
      const read = await raw(base, 'GET', path, VERSION);
      assert.equal(read.body, `random ${i}`, `${name} reads back`);
    } else {
      assertServiceError(put, `random name ${JSON.stringify(name)}`);
    }
  }
  assert.ok(accepted.length > 10 && accepted.length < 150, `both outcomes occur (${accepted.length} of 150 stored)`);

  // Through the SDK: a name that climbs out of the container does not make a client; it
  // escapes `\` and NUL, and resolves a `..` inside the container.
  const alpha = service.getContainerClient('alpha');
  assert.throws(() => alpha.getBlockBlobClient('../../victim'), /Unable to extract blobName and containerName/);
  const refusedBySdk: [string, string][] = [
    ['..\\..\\victim', 'InvalidResourceName'],
    ['nul\u0000name', 'InvalidResourceName'],
  ];
  for (const [name, code] of refusedBySdk) {
    await assert.rejects(alpha.getBlockBlobClient(name).upload('sdk attack', 10), (err: { statusCode?: number; code?: string }) => {
      assert.equal(err.statusCode, 400, name);
      assert.equal(err.code, code, name);
      return true;
    });
  }
  // The SDK escapes `%`: this is a name of those literal characters, with no dot segment.
  await alpha.getBlockBlobClient('..%2F..%2Fvictim').upload('literal', 7);
  assert.equal((await alpha.getBlockBlobClient('..%2F..%2Fvictim').downloadToBuffer()).toString(), 'literal');
  // A `..` inside the container resolves as it does at the service: `sub/../resolved` is `resolved`.
  await alpha.getBlockBlobClient('sub/../resolved').upload('resolved', 8);
  assert.equal((await alpha.getBlockBlobClient('resolved').downloadToBuffer()).toString(), 'resolved');

  // Nothing stored was lost, and nothing was written outside the containers' folders.
  for (const name of ['alpha', 'beta']) {
    assert.equal((await service.getContainerClient(name).getBlockBlobClient('victim').downloadToBuffer()).toString(), `victim in ${name}`);
  }
  const names: string[] = [];
  for await (const blob of service.getContainerClient('beta').listBlobsFlat()) names.push(blob.name);
  assert.deepEqual(names, ['victim'], 'beta holds only its own blob');
  assert.equal(await readFile(join(root, 'victim'), 'utf8'), 'beside the data dir');
  const outsideAfter = (await filesUnder(root)).filter((f) => !f.startsWith(join('data', 'storage')));
  assert.deepEqual(outsideAfter, outsideBefore, 'no file appeared beside the storage folder');
  const account = join('accounts', 'devstoreaccount1');
  for (const file of await filesUnder(storageDir)) {
    const [, , container, ...rest] = file.split('/');
    if (!file.startsWith(account) || rest.length === 0) continue;
    assert.ok(container === 'alpha' || container === 'beta', file);
    const inContainer = rest.join('/');
    assert.match(inContainer, /^(container\.json|blobs\.(json|log)|data\/[0-9a-f-]{36}|blocks\/[0-9a-f]{32}\/[0-9a-f]+)$/, `${file}: only ids and index files`);
  }
  const storageTop = (await readdir(join(storageDir, 'accounts'))).sort();
  assert.ok(!storageTop.includes('victim'), 'no account folder named by a request');
});
