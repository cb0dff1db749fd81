/**
 * Runs one scenario of the official @azure/storage-blob SDK against a running
 * storage component and prints what it saw as one JSON line. sdk.test.ts
 * spawns it per scenario: the managed identity endpoint is chosen once per
 * process, and NODE_EXTRA_CA_CERTS must be set when a process starts.
 */
import { BlobServiceClient, StorageSharedKeyCredential } from '@azure/storage-blob';
import { ClientSecretCredential, ManagedIdentityCredential, type TokenCredential } from '@azure/identity';

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is not set`);
  return value;
};

function credential(): TokenCredential | StorageSharedKeyCredential {
  switch (env('SCENARIO_CREDENTIAL')) {
    case 'managed-identity':
      return new ManagedIdentityCredential();
    case 'client-secret':
      return new ClientSecretCredential(env('TENANT_ID'), env('CLIENT_ID'), env('CLIENT_SECRET'), {
        authorityHost: env('AUTHORITY_HOST'),
        disableInstanceDiscovery: true,
      });
    default:
      return new StorageSharedKeyCredential(env('ACCOUNT_NAME'), env('ACCOUNT_KEY'));
  }
}

async function errorOf(run: () => Promise<unknown>): Promise<{ statusCode?: number; code?: string } | null> {
  try {
    await run();
    return null;
  } catch (err) {
    const e = err as { statusCode?: number; code?: string };
    return { statusCode: e.statusCode, code: e.code };
  }
}

async function names<T extends { name: string }>(items: AsyncIterable<T>): Promise<string[]> {
  const out: string[] = [];
  for await (const item of items) out.push(item.name);
  return out;
}

const service = new BlobServiceClient(env('BLOB_ENDPOINT'), credential());
const prefix = env('SCENARIO_PREFIX');

const scenarios: Record<string, () => Promise<unknown>> = {
  /** The §4.10 flow and the blob surface, end to end. */
  async full() {
    const created = [];
    for (const suffix of ['a', 'b', 'c']) {
      const container = service.getContainerClient(`${prefix}-${suffix}`);
      created.push((await container.create({ metadata: { purpose: `test${suffix}` } })).errorCode ?? 'created');
    }
    const again = await service.getContainerClient(`${prefix}-a`).createIfNotExists();
    const pages: string[][] = [];
    for await (const page of service.listContainers({ prefix }).byPage({ maxPageSize: 1 })) {
      pages.push((page.containerItems ?? []).map((c) => c.name));
    }
    const withMetadata: Record<string, unknown> = {};
    for await (const c of service.listContainers({ prefix, includeMetadata: true })) {
      withMetadata[c.name] = {
        metadata: c.metadata,
        etagQuoted: /^".*"$/.test(c.properties.etag),
        lastModifiedIsDate: c.properties.lastModified instanceof Date,
      };
    }
    const container = service.getContainerClient(`${prefix}-a`);
    const hello = container.getBlockBlobClient('dir/hello.txt');
    await hello.upload('hello world', 11);
    const helloBuffer = (await hello.downloadToBuffer()).toString();
    const download = await hello.download();
    const downloaded = await new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      download
        .readableStreamBody!.on('data', (c: Buffer) => chunks.push(c))
        .on('end', () => resolve(Buffer.concat(chunks).toString()))
        .on('error', reject);
    });
    const big = Buffer.alloc(2500);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7) % 251;
    const blocks = container.getBlockBlobClient('big.bin');
    await blocks.uploadData(big, { maxSingleShotSize: 1024, blockSize: 1024 });
    const ranged = await blocks.downloadToBuffer(0, undefined, { blockSize: 1000 });
    const partial = await blocks.downloadToBuffer(1000, 700);
    const exists = [await blocks.exists(), await container.getBlobClient('nope').exists()];
    const flatPages: string[][] = [];
    for await (const page of container.listBlobsFlat().byPage({ maxPageSize: 1 })) flatPages.push(page.segment.blobItems.map((b) => b.name));
    const byPrefix = await names(container.listBlobsFlat({ prefix: 'dir/' }));
    const hierarchy: string[] = [];
    for await (const item of container.listBlobsByHierarchy('/')) hierarchy.push(item.kind === 'prefix' ? `prefix:${item.name}` : item.name);
    await blocks.delete();
    const afterDelete = await blocks.exists();
    const missingContainer = await errorOf(() => service.getContainerClient(`${prefix}-missing`).getBlockBlobClient('x').upload('x', 1));
    const deleted = await service.getContainerClient(`${prefix}-c`).delete();
    return {
      created,
      createIfNotExists: { succeeded: again.succeeded, errorCode: again.errorCode },
      pages,
      withMetadata,
      helloBuffer,
      downloaded,
      contentLength: download.contentLength,
      rangedEqual: Buffer.compare(ranged, big) === 0,
      partialEqual: Buffer.compare(partial, big.subarray(1000, 1700)) === 0,
      exists,
      flatPages,
      byPrefix,
      hierarchy,
      afterDelete,
      missingContainer,
      deletedStatus: deleted._response.status,
      remaining: await names(service.listContainers({ prefix })),
    };
  },
  /** Listing only: what a principal with a given role may do. */
  async listOnly() {
    return {
      list: await errorOf(() => names(service.listContainers())),
      create: await errorOf(() => service.getContainerClient(`${prefix}-denied`).create()),
    };
  },
};

const scenario = scenarios[env('SCENARIO')];
if (!scenario) throw new Error(`unknown scenario ${process.env.SCENARIO}`);
try {
  process.stdout.write(JSON.stringify({ ok: true, result: await scenario() }) + '\n');
} catch (err) {
  const e = err as { name?: string; code?: string; statusCode?: number; message?: string };
  process.stdout.write(JSON.stringify({ ok: false, error: { name: e.name, code: e.code, statusCode: e.statusCode, message: e.message } }) + '\n');
}
