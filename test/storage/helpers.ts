/** Starts identity and storage on one data dir, and gets tokens the way clients do. */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createHmac, createPrivateKey } from 'node:crypto';
import { SignJWT } from 'jose';
import { request } from 'undici';
import { startStorage, type StorageOptions } from '../../src/storage/server.ts';
import type { RunningComponent } from '../../src/common/component.ts';
import { BlobServiceClient, StorageSharedKeyCredential } from '@azure/storage-blob';
import { startForTest, type Cleanup, type StartedIdentity } from '../identity/helpers.ts';
import { tempDataDir } from '../helpers/index.ts';
import { DEVELOPMENT_KEY } from '../../src/storage/persistence/accounts.ts';

export interface StorageStack {
  identity: StartedIdentity;
  storage: RunningComponent;
  /** https://127.0.0.1:<port>/devstoreaccount1 */
  blobEndpoint: string;
  dataDir: string;
  imdsToken(resource?: string, clientId?: string): Promise<string>;
  /** A token signed with the issuer's own key, with claims changed (expired, wrong issuer, …). */
  forgeToken(claims: Record<string, unknown>): Promise<string>;
  get(
    path: string,
    headers?: Record<string, string>,
    method?: 'GET' | 'PUT' | 'DELETE' | 'HEAD',
  ): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>;
}

export async function startStorageStack(t: Cleanup, options: Partial<StorageOptions> = {}): Promise<StorageStack> {
  const identity = await startForTest(t);
  const storage = await startStorage({ dataDir: identity.dataDir, port: 0, httpsPort: 0, logLevel: 'silent', authorityHost: identity.issuerUrl, ...options });
  t.after(() => storage.close());
  const blobEndpoint = storage.facts!.storage!.blobEndpoint;
  return {
    identity,
    storage,
    blobEndpoint,
    dataDir: identity.dataDir,
    async imdsToken(resource = 'https://storage.azure.com', clientId) {
      const query = new URLSearchParams({ 'api-version': '2018-02-01', resource, ...(clientId ? { client_id: clientId } : {}) });
      const answer = await request(`${identity.imdsUrl}/metadata/identity/oauth2/token?${query}`, { headers: { Metadata: 'true' } });
      const body = (await answer.body.json()) as { access_token?: string };
      if (!body.access_token) throw new Error(`no token: ${JSON.stringify(body)}`);
      return body.access_token;
    },
    async forgeToken(claims) {
      const file = JSON.parse(await readFile(join(identity.dataDir, 'identity', 'signing-keys.json'), 'utf8')) as {
        keys: { kid: string; privateKey: string; retiredAt: string | null }[];
      };
      const key = file.keys.find((k) => k.retiredAt === null)!;
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({
        aud: 'https://storage.azure.com',
        iss: `https://sts.windows.net/${identity.tenantId}/`,
        tid: identity.tenantId,
        oid: '00000000-0000-0000-0000-000000000001',
        sub: '00000000-0000-0000-0000-000000000001',
        ver: '1.0',
        iat: now,
        nbf: now,
        exp: now + 3600,
        ...claims,
      })
        .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: key.kid })
        .sign(createPrivateKey(key.privateKey));
    },
    async get(path, headers = {}, method = 'GET') {
      const answer = await request(`${blobEndpoint}${path}`, { method, headers, dispatcher: identity.dispatcher });
      return { status: answer.statusCode, headers: answer.headers, body: await answer.body.text() };
    },
  };
}

/** Runs one scenario of sdk-scenarios.ts in its own process and returns what it printed. */
export async function runSdkScenario(
  stack: StorageStack,
  env: Record<string, string>,
): Promise<{ ok: boolean; result?: Record<string, unknown>; error?: Record<string, unknown> }> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', new URL('./sdk-scenarios.ts', import.meta.url).pathname], {
    env: {
      ...process.env,
      NODE_EXTRA_CA_CERTS: stack.identity.caCertPath,
      AZURE_POD_IDENTITY_AUTHORITY_HOST: stack.identity.imdsUrl,
      BLOB_ENDPOINT: stack.blobEndpoint,
      AUTHORITY_HOST: stack.identity.issuerUrl,
      TENANT_ID: stack.identity.tenantId,
      ...env,
    },
    timeout: 120_000,
  });
  return JSON.parse(stdout.trim().split('\n').pop()!) as { ok: boolean; result?: Record<string, unknown>; error?: Record<string, unknown> };
}

/** The development account, its Shared Key credential (the SDK's SAS builders take it), and a signature with its key (hand-signed SAS and requests). */
export const DEVELOPMENT_ACCOUNT = 'devstoreaccount1';
export const developmentCredential = new StorageSharedKeyCredential(DEVELOPMENT_ACCOUNT, DEVELOPMENT_KEY);
export function signWithDevelopmentKey(stringToSign: string): string {
  return createHmac('sha256', Buffer.from(DEVELOPMENT_KEY, 'base64')).update(stringToSign).digest('base64');
}

/** Storage alone on port 0, and a client signing with the development account's key over plain HTTP (Shared Key). */
export async function startSharedKeyStorage(
  t: Cleanup,
  extra: { clock?: () => number } = {},
): Promise<{ service: BlobServiceClient; dataDir: string; storage: RunningComponent }> {
  const dataDir = await tempDataDir(t);
  const storage = await startStorage({ dataDir, host: '127.0.0.1', port: 0, httpsPort: 0, logLevel: 'silent', ...extra });
  t.after(() => storage.close());
  const endpoint = storage.facts!.storage!.httpBlobEndpoint;
  return {
    service: BlobServiceClient.fromConnectionString(
      `DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=${DEVELOPMENT_KEY};BlobEndpoint=${endpoint};`,
    ),
    dataDir,
    storage,
  };
}

/**
 * A request signed with the development key (Shared Key), built by hand as a client without
 * the SDK would: for wire details the SDK does not let a test choose (its x-ms-version, a raw body).
 */
export function sharedKeyFetch(url: string, init: { method?: string; body?: string; headers?: Record<string, string> } = {}): Promise<Response> {
  const method = init.method ?? 'GET';
  const target = new URL(url);
  const headers: Record<string, string> = { 'x-ms-date': new Date().toUTCString(), ...init.headers };
  const get = (name: string) => headers[name] ?? '';
  const length = init.body ? String(Buffer.byteLength(init.body)) : '';
  const standard = [method, '', '', length, '', get('content-type'), '', '', '', '', '', ''];
  const canonicalHeaders = Object.keys(headers)
    .filter((name) => name.startsWith('x-ms-'))
    .sort()
    .map((name) => `${name}:${headers[name]}`);
  const query = [...target.searchParams.keys()].sort().map((key) => `\n${key}:${target.searchParams.get(key)}`);
  const stringToSign = [...standard, ...canonicalHeaders, `/devstoreaccount1${target.pathname}${query.join('')}`].join('\n');
  const signature = signWithDevelopmentKey(stringToSign);
  return fetch(url, { method, ...(init.body ? { body: init.body } : {}), headers: { ...headers, authorization: `SharedKey devstoreaccount1:${signature}` } });
}
