import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BlobServiceClient, RestError, StorageSharedKeyCredential } from '@azure/storage-blob';
import { startStorage } from '../../src/storage/server.ts';
import { DEVELOPMENT_KEY } from '../../src/storage/persistence/accounts.ts';
import type { RunningComponent } from '../../src/common/component.ts';
import { tempDataDir } from '../helpers/index.ts';

async function startOn(dataDir: string): Promise<{ storage: RunningComponent; service: BlobServiceClient }> {
  const storage = await startStorage({ dataDir, host: '127.0.0.1', port: 0, httpsPort: 0, logLevel: 'silent' });
  const service = new BlobServiceClient(storage.facts!.storage!.httpBlobEndpoint, new StorageSharedKeyCredential('devstoreaccount1', DEVELOPMENT_KEY), {
    retryOptions: { maxTries: 1 },
  });
  return { storage, service };
}

const status = (call: Promise<{ _response: { status: number } }>) =>
  call.then(
    (answer) => answer._response.status,
    (err: unknown) => (err instanceof RestError ? (err.statusCode ?? 0) : Promise.reject(err)),
  );

test('Delete Container and Create Container of one name at once are ordered: a container whose creation was acknowledged is there, takes blobs and survives a restart', async (t) => {
  const dataDir = await tempDataDir(t);
  let { storage, service } = await startOn(dataDir);
  t.after(() => storage.close());
  const created: string[] = [];
  for (let trial = 0; trial < 15; trial++) {
    const name = `race-${trial}`;
    const container = service.getContainerClient(name);
    await container.create();
    await container.getBlockBlobClient('old').upload('old', 3);
    const [deleted, recreated] = await Promise.all([status(container.delete()), status(container.create())]);
    assert.equal(deleted, 202, `${name}: the delete`);
    assert.ok(recreated === 201 || recreated === 409, `${name}: the create answered ${recreated}`);
    assert.equal(await container.exists(), recreated === 201, `${name} is there exactly when its creation was acknowledged`);
    if (recreated !== 201) continue;
    created.push(name);
    assert.equal(await status(container.getBlockBlobClient('new').upload('new', 3)), 201, `${name} takes a blob`);
    assert.equal(await container.getBlockBlobClient('old').exists(), false, `${name} starts empty`);
  }
  await storage.close();
  ({ storage, service } = await startOn(dataDir));
  for (const name of created) {
    const blobs: string[] = [];
    for await (const blob of service.getContainerClient(name).listBlobsFlat()) blobs.push(blob.name);
    assert.deepEqual(blobs, ['new'], `${name} and its blob after a restart`);
  }
});
