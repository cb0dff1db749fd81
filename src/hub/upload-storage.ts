/**
 * The storage account of the hub's file-upload settings, reached through the
 * storage's public API with the storage SDK and the account key of the
 * connection string (the SDK signs requests and SAS tokens).
 */
import { BlobSASPermissions, StorageSharedKeyCredential } from '@azure/storage-blob';
import { openBlobServiceClient } from '../common/blob-service.ts';
import { ConfigError } from '../common/errors.ts';
import { HubError } from './domain/errors.ts';
import type { UploadStorage } from './domain/file-upload.ts';

/** A failure of the storage account is the hub's 503: the device may try again. */
async function fromStorage<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw new HubError('ServiceUnavailable', `the file-upload storage failed to ${what}: ${(err as Error).message.split('\n')[0]!.slice(0, 300)}`);
  }
}

/**
 * The container of `connectionString`'s account named `containerName`. The device SDKs dial
 * `https://{hostName}/…` whatever the account's endpoint says, so the endpoint must be HTTPS.
 */
export function openUploadStorage(connectionString: string, containerName: string, ca: string | undefined): UploadStorage {
  if (!/^(?=.{3,63}$)[a-z0-9]+(?:-[a-z0-9]+)*$/.test(containerName))
    throw new ConfigError(
      `hub: --file-upload-container ${JSON.stringify(containerName)} is not a container name (3 to 63 lowercase letters, digits and single hyphens)`,
    );
  let service;
  try {
    service = openBlobServiceClient(connectionString, ca);
  } catch (err) {
    throw new ConfigError(`hub: --file-upload-connection-string is not a storage connection string: ${(err as Error).message}`);
  }
  if (!(service.credential instanceof StorageSharedKeyCredential))
    throw new ConfigError('hub: --file-upload-connection-string must hold the account key (AccountKey=), which the hub signs SAS tokens with');
  if (!service.url.startsWith('https:'))
    throw new ConfigError(`hub: the file-upload blob endpoint must be HTTPS (the device SDKs upload to https://…), not ${service.url}`);
  const container = service.getContainerClient(containerName);
  // `127.0.0.1:10443/devstoreaccount1` for a path-style account: the SDKs put it after `https://` as it is.
  const hostName = service.url.replace(/^https:\/\//, '').replace(/\/$/, '');
  return {
    async blobSas(blobName, expiresOn) {
      await fromStorage('create the container', () => container.createIfNotExists());
      const url = await container.getBlobClient(blobName).generateSasUrl({ permissions: BlobSASPermissions.parse('rcw'), expiresOn });
      return { hostName, containerName, sasToken: url.slice(url.indexOf('?')) };
    },
    async blobProperties(blobName) {
      const blob = container.getBlobClient(blobName);
      const properties = await fromStorage('read the blob', async () => {
        try {
          return await blob.getProperties();
        } catch (err) {
          if ((err as { statusCode?: number }).statusCode === 404) return undefined;
          throw err;
        }
      });
      return properties && { url: blob.url, size: properties.contentLength ?? 0, lastModified: properties.lastModified ?? new Date() };
    },
  };
}
