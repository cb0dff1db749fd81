// The core blob flows, run by latest-sdk.test.ts with the @latest releases of
// @azure/storage-blob and @azure/identity it installed beside this file: one pass per
// authentication path (Shared Key, SAS, bearer token). Prints one JSON line.
import { readFileSync } from 'node:fs';
import { BlobServiceClient, ContainerSASPermissions, StorageSharedKeyCredential } from '@azure/storage-blob';
import { ManagedIdentityCredential } from '@azure/identity';

const env = (name) => {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is not set`);
  return value;
};
const installed = (name) => JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url), 'utf8')).version;

async function coreFlows(service, containerName, viaSas) {
  const seen = {};
  const container = service.getContainerClient(containerName);
  if (!viaSas) seen.createdVersion = (await container.create({ metadata: { path: containerName } })).version;
  const blob = container.getBlockBlobClient('dir/hello.txt');
  seen.uploadStatus = (await blob.upload('hello latest', 12, { blobHTTPHeaders: { blobContentType: 'text/plain' } }))._response.status;
  const blocks = container.getBlockBlobClient('blocks.bin');
  const ids = ['one', 'two', 'six'].map((id) => Buffer.from(id).toString('base64'));
  for (const [i, id] of ids.entries()) await blocks.stageBlock(id, Buffer.alloc(4, i + 65), 4);
  await blocks.commitBlockList(ids);
  seen.blocks = (await blocks.downloadToBuffer()).toString();
  seen.downloaded = (await blob.downloadToBuffer()).toString();
  const properties = await blob.getProperties();
  seen.properties = { contentType: properties.contentType, contentLength: properties.contentLength, version: properties.version };
  seen.listed = [];
  for await (const item of container.listBlobsFlat()) seen.listed.push(item.name);
  seen.exists = await container.getBlobClient('missing').exists();
  await blob.delete();
  seen.afterDelete = await blob.exists();
  if (!viaSas) await container.delete();
  return seen;
}

const key = new StorageSharedKeyCredential(env('ACCOUNT_NAME'), env('ACCOUNT_KEY'));
const sharedKey = new BlobServiceClient(env('BLOB_ENDPOINT'), key);
const result = { storageBlob: installed('@azure/storage-blob'), identity: installed('@azure/identity') };
try {
  result.sharedKey = await coreFlows(sharedKey, 'latest-shared-key', false);

  const forSas = sharedKey.getContainerClient('latest-sas');
  await forSas.create();
  const sasUrl = await forSas.generateSasUrl({ permissions: ContainerSASPermissions.parse('racwdl'), expiresOn: new Date(Date.now() + 600_000) });
  const sasService = new BlobServiceClient(`${env('BLOB_ENDPOINT')}?${new URL(sasUrl).search.slice(1)}`);
  result.sas = await coreFlows(sasService, 'latest-sas', true);

  result.bearer = await coreFlows(new BlobServiceClient(env('BLOB_ENDPOINT'), new ManagedIdentityCredential()), 'latest-bearer', false);
  result.ok = true;
} catch (err) {
  result.ok = false;
  result.error = { message: err.message, statusCode: err.statusCode, code: err.code };
}
console.log(JSON.stringify(result));
