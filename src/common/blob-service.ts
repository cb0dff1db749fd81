/** The storage SDK's client for a storage connection string, as components that use blob storage open it. */
import { BlobServiceClient, type StoragePipelineOptions } from '@azure/storage-blob';

/**
 * Trusts `ca` (PEM) on an https: BlobEndpoint; one try per call (the caller answers its own client).
 * Throws the SDK's error for a connection string it cannot use.
 */
export function openBlobServiceClient(connectionString: string, ca: string | undefined): BlobServiceClient {
  // The SDK's TLS settings apply to an https: BlobEndpoint only (an agent would be used for http: too, and refuse it).
  const options = { retryOptions: { maxTries: 1 }, ...(ca ? { tlsOptions: { ca } } : {}) } as StoragePipelineOptions;
  return BlobServiceClient.fromConnectionString(connectionString, options);
}
