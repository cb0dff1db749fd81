import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { BlobServiceClient, RestError, StorageSharedKeyCredential } from '@azure/storage-blob';
import { startStorage } from '../../src/storage/server.ts';
import { DEVELOPMENT_KEY } from '../../src/storage/persistence/accounts.ts';
import type { RunningComponent } from '../../src/common/component.ts';
import { smallDisk } from '../helpers/small-disk.ts';

const BIN = new URL('../../bin/offcloud.js', import.meta.url).pathname;

async function startOn(dataDir: string): Promise<{ storage: RunningComponent; service: BlobServiceClient }> {
  const storage = await startStorage({ dataDir, host: '127.0.0.1', port: 0, httpsPort: 0, logLevel: 'silent' });
  const service = new BlobServiceClient(storage.facts!.storage!.httpBlobEndpoint, new StorageSharedKeyCredential('devstoreaccount1', DEVELOPMENT_KEY), {
    retryOptions: { maxTries: 1 },
  });
  return { storage, service };
}

/** What a refused call answered: status and x-ms-error-code. */
async function refusal(call: Promise<unknown>): Promise<string> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof RestError, String(err));
    return `${err.statusCode} ${String((err.details as { errorCode?: string } | undefined)?.errorCode)}`;
  }
  return 'accepted';
}

const bytes = (size: number, seed: number) => Buffer.alloc(size, seed);

test('on a full disk storage refuses writes with 503 ServerBusy, shows nothing it refused, keeps serving reads, takes writes again once space returns, and a start on a full disk says so in one line', async (t) => {
  const disk = await smallDisk(t, 16 * 1024 * 1024);
  let { storage, service } = await startOn(disk.path);
  t.after(() => storage.close());
  const container = service.getContainerClient('box');
  await container.create();
  await container.getBlockBlobClient('kept').upload(bytes(5000, 1), 5000);
  await container.getBlockBlobClient('victim').upload(bytes(3000, 2), 3000);

  await disk.fill();
  assert.equal(await refusal(container.getBlockBlobClient('new').upload(bytes(64 * 1024, 3), 64 * 1024)), '503 ServerBusy');
  // A body still arriving when the write fails: the refusal is answered, not lost with the connection.
  for (const size of [200_000, 1_000_000, 4_000_000]) {
    assert.equal(await refusal(container.getBlockBlobClient('new').upload(bytes(size, 3), size)), '503 ServerBusy', `an upload of ${size} bytes`);
  }
  assert.equal(await refusal(container.getBlockBlobClient('victim').upload(bytes(64 * 1024, 4), 64 * 1024)), '503 ServerBusy');
  assert.equal(await refusal(service.getContainerClient('more').create()), '503 ServerBusy');
  // Many small overwrites: each either lands whole or is refused, whatever room the log's last page has.
  const small = container.getBlockBlobClient('small');
  const landed: number[] = [];
  for (let i = 0; i < 40; i++) {
    const outcome = await refusal(small.upload(bytes(10, i), 10, { metadata: { n: String(i), padding: 'p'.repeat(2000) } }));
    if (outcome === 'accepted') landed.push(i);
    else assert.equal(outcome, '503 ServerBusy');
  }

  const listed = async () => {
    const names: string[] = [];
    for await (const blob of container.listBlobsFlat()) names.push(blob.name);
    return names;
  };
  assert.deepEqual(await listed(), ['kept', ...(landed.length ? ['small'] : []), 'victim'], 'refused writes are not listed');
  assert.equal(await refusal(container.getBlockBlobClient('new').download()), '404 BlobNotFound');
  assert.deepEqual(await container.getBlockBlobClient('victim').downloadToBuffer(), bytes(3000, 2), 'a refused overwrite leaves the old bytes');
  assert.deepEqual(await container.getBlockBlobClient('kept').downloadToBuffer(), bytes(5000, 1), 'reads are served while the disk is full');
  assert.equal(await service.getContainerClient('more').exists(), false, 'a refused container is not there');
  if (landed.length) assert.equal((await small.getProperties()).metadata?.n, String(landed.at(-1)), 'the last acknowledged small write is the one read');

  await disk.free();
  await container.getBlockBlobClient('after').upload(bytes(64 * 1024, 5), 64 * 1024);
  await container.getBlockBlobClient('victim').upload(bytes(4000, 6), 4000);
  await service.getContainerClient('more').create();

  await storage.close();
  ({ storage, service } = await startOn(disk.path));
  const again = service.getContainerClient('box');
  const names: string[] = [];
  for await (const blob of again.listBlobsFlat()) names.push(blob.name);
  assert.deepEqual(names, ['after', 'kept', ...(landed.length ? ['small'] : []), 'victim'], 'after a restart: what was acknowledged, nothing refused');
  assert.deepEqual(await again.getBlockBlobClient('victim').downloadToBuffer(), bytes(4000, 6));
  assert.deepEqual(await again.getBlockBlobClient('after').downloadToBuffer(), bytes(64 * 1024, 5));
  if (landed.length) assert.equal((await again.getBlockBlobClient('small').getProperties()).metadata?.n, String(landed.at(-1)));
  assert.equal(await service.getContainerClient('more').exists(), true);

  // A change left in the index log is folded in at start, which needs room.
  await again.getBlockBlobClient('last').upload(bytes(10, 7), 10);
  await storage.close();
  await disk.fill();
  const started = await promisify(execFile)(process.execPath, [BIN, 'storage', '--data-dir', disk.path, '--port', '0', '--https-port', '0'], {
    timeout: 60_000,
  }).then(
    () => assert.fail('storage started on a full disk with an index to fold in'),
    (err: { code: number; stderr: string }) => err,
  );
  assert.equal(started.code, 1);
  assert.match(started.stderr, /^offcloud: storage: the disk holding the data dir \S+ is full; free some space and start again\n$/);
});
