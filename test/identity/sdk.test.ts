/**
 * The official SDKs, unmodified, against the identity component: each
 * scenario of sdk-client.ts runs in its own process (the SDKs choose the
 * managed identity endpoint once per process), trusting the local CA through
 * NODE_EXTRA_CA_CERTS.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { claimsOf, startForTest, suiteCleanup, type StartedIdentity } from './helpers.ts';
import { addClientCertificate, createClient, createUserAssignedIdentity, grantAppRole } from '../../src/identity/manage.ts';
import { createSelfSignedKey } from '../../src/identity/keys.ts';
import { tempDataDir } from '../helpers/index.ts';
import { STORAGE_RESOURCE, type ManagedIdentity } from '../../src/identity/directory/index.ts';

const CLIENT_SCRIPT = fileURLToPath(new URL('./sdk-client.ts', import.meta.url));

/** Runs one scenario with only the environment given (plus PATH/HOME), and returns its JSON line. */
function runScenario(name: string, env: Record<string, string>): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLIENT_SCRIPT, name], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 90_000,
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line.startsWith('{')) return reject(new Error(`scenario ${name} exited ${code}: ${err.slice(-2000)}`));
      resolve(JSON.parse(line) as Record<string, unknown>);
    });
  });
}

describe('official SDKs', { concurrency: 2 }, () => {
  let id: StartedIdentity;
  let client: { appId: string; secret: string; principalId: string };
  let system: ManagedIdentity;
  let user: ManagedIdentity;
  let apiAppId: string;
  const base = () => ({ NODE_EXTRA_CA_CERTS: id.caCertPath });

  const cleanup = suiteCleanup(after);
  before(async () => {
    id = await startForTest(cleanup);
    const made = await id.change((d) => {
      const c = createClient(d, { displayName: 'sdk client' });
      grantAppRole(d, c.client.appId, 'api://offcloud-demo-api', 'Demo.Read.All');
      return { appId: c.client.appId, secret: c.secret, principalId: c.client.servicePrincipalId, user: createUserAssignedIdentity(d, 'sdk-user') };
    });
    client = made;
    user = made.user;
    const directory = await id.directory();
    system = directory.managedIdentities.find((m) => m.kind === 'system')!;
    apiAppId = directory.apis[0]!.appId;
  });

  const clientEnv = () => ({
    ...base(),
    ISSUER: id.issuerUrl,
    TENANT: id.tenantId,
    CLIENT_ID: client.appId,
    CLIENT_SECRET: client.secret,
    SCOPE: 'api://offcloud-demo-api/.default',
  });

  test('R-TOKEN-1 R-TOKEN-2 msal-node client credentials: token, cached second call, tenant case, authority forms, AADSTS errors, certificate assertions', async (t) => {
    const dir = await tempDataDir(t);
    const made = await createSelfSignedKey('sdk client certificate');
    const keyFile = join(dir, 'client.key');
    await writeFile(keyFile, made.privateKeyPem, { mode: 0o600 });
    const certificate = await id.change((d) => addClientCertificate(d, client.appId, made.certificatePem));
    const r = (await runScenario('msal', {
      ...clientEnv(),
      CERT_KEY_FILE: keyFile,
      CERT_SHA256_HEX: Buffer.from(certificate.thumbprintSha256, 'base64url').toString('hex'),
      CERT_SHA1_HEX: Buffer.from(certificate.thumbprint, 'base64url').toString('hex'),
    })) as Record<string, Record<string, unknown>>;
    assert.equal(r.first!.fromCache, false);
    assert.equal(r.second!.fromCache, true);
    assert.equal(r.second!.token, r.first!.token);
    const expiresIn = (Number(r.first!.expiresOn) - Date.now()) / 1000;
    assert.ok(expiresIn > 3000 && expiresIn <= 3600, `expiresOn ≈ now + expires_in, got ${expiresIn}`);
    assert.equal(r.mixedCase, true);
    assert.equal(r.trailingSlash, true);
    assert.equal(r.v2Authority, true);
    const claims = claimsOf(String(r.first!.token));
    assert.deepEqual(claims.roles, ['Demo.Read.All']);
    assert.equal(claims.aud, apiAppId);
    assert.equal(claims.azp, client.appId);
    assert.equal(r.wrongSecret!.errorCode, 'invalid_client');
    assert.equal(r.wrongSecret!.status, 401);
    assert.match(String(r.wrongSecret!.message), /AADSTS7000215/);
    assert.equal(r.unknownClient!.errorCode, 'unauthorized_client');
    assert.equal(r.unknownClient!.status, 400);
    assert.match(String(r.unknownClient!.message), /700016/);
    assert.equal(r.badScope!.errorCode, 'invalid_scope');
    assert.equal(r.badScope!.status, 400);
    // An unknown tenant fails discovery, which MSAL reports as endpoints_resolution_error.
    assert.equal(r.unknownTenant!.errorCode, 'endpoints_resolution_error');
    // Certificate credentials: assertions with x5t#S256 (PS256) and x5t (RS256) give tokens with azpacr 2.
    for (const token of [r.certificate!.sha256, r.certificate!.sha1]) {
      const claims = claimsOf(String(token));
      assert.equal(claims.azp, client.appId);
      assert.equal(claims.azpacr, '2');
    }
    const unregistered = r.certificate!.unregistered as Record<string, unknown>;
    assert.equal(unregistered.errorCode, 'invalid_client');
    assert.match(String(unregistered.message), /AADSTS700027/);
  });

  test('R-TOKEN-1 @azure/identity ClientSecretCredential (authorityHost, disableInstanceDiscovery) and DefaultAzureCredential from AZURE_* variables', async () => {
    const r = (await runScenario('client-secret', {
      ...clientEnv(),
      AZURE_TENANT_ID: id.tenantId,
      AZURE_CLIENT_ID: client.appId,
      AZURE_CLIENT_SECRET: client.secret,
      AZURE_AUTHORITY_HOST: `${id.issuerUrl}/`,
    })) as Record<string, Record<string, unknown> | boolean>;
    const first = r.first as Record<string, unknown>;
    assert.equal(claimsOf(String(first.token)).azp, client.appId);
    assert.equal(r.sameSecond, true, 'the second getToken is served from the cache');
    const wrong = r.wrongSecret as Record<string, unknown>;
    assert.equal(wrong.name, 'AuthenticationRequiredError');
    assert.match(String(wrong.message), /invalid_client/);
    assert.match(String(wrong.message), /AADSTS7000215/);
    const viaEnvironment = claimsOf(String((r.viaEnvironment as Record<string, unknown>).token));
    assert.equal(viaEnvironment.aud, 'https://storage.azure.com');
    assert.equal(viaEnvironment.appid, client.appId);
    assert.equal(viaEnvironment.ver, '1.0');
  });

  for (const trailing of ['', '/']) {
    test(`R-IMDS-1 R-IMDS-4 ManagedIdentityCredential via AZURE_POD_IDENTITY_AUTHORITY_HOST${trailing ? ' with a trailing slash' : ''}: system and user-assigned`, async () => {
      const r = (await runScenario('managed-identity', {
        ...base(),
        AZURE_POD_IDENTITY_AUTHORITY_HOST: `${id.imdsUrl}${trailing}`,
        USER_CLIENT_ID: user.clientId,
      })) as Record<string, Record<string, unknown>>;
      const systemClaims = claimsOf(String(r.system!.token));
      assert.equal(systemClaims.aud, 'https://storage.azure.com');
      assert.equal(systemClaims.oid, system.principalId);
      assert.equal(systemClaims.appid, system.clientId);
      assert.equal(systemClaims.iss, `https://sts.windows.net/${id.tenantId}/`);
      const expiresIn = (Number(r.system!.expiresOnTimestamp) - Date.now()) / 1000;
      assert.ok(expiresIn > 86_000 && expiresIn <= 86_400, `expires_on honoured, got ${expiresIn}`);
      const userClaims = claimsOf(String(r.user!.token));
      assert.equal(userClaims.appid, user.clientId);
      assert.equal(userClaims.oid, user.principalId);
      assert.equal(userClaims.xms_mirid, user.resourceId);
      assert.equal(r.unknown!.name, 'CredentialUnavailableError');
      assert.match(String(r.unknown!.message), /Identity not found/);
    });
  }

  test('R-IMDS-1 DefaultAzureCredential with only AZURE_POD_IDENTITY_AUTHORITY_HOST', async () => {
    const r = await runScenario('default-managed-identity', { ...base(), AZURE_POD_IDENTITY_AUTHORITY_HOST: id.imdsUrl });
    const claims = claimsOf(String(r.token));
    assert.equal(claims.oid, system.principalId);
    assert.equal(claims.aud, STORAGE_RESOURCE.identifierUris[0]);
  });

  test('R-IMDS-4 App Service style: IDENTITY_ENDPOINT and IDENTITY_HEADER', async () => {
    const published = id.running.facts!.identity!;
    const r = await runScenario('app-service', { ...base(), IDENTITY_ENDPOINT: published.identityEndpoint, IDENTITY_HEADER: published.identityHeader });
    const claims = claimsOf(String(r.token));
    assert.equal(claims.aud, 'https://vault.azure.net');
    assert.equal(claims.oid, system.principalId);
    assert.ok(Number(r.expiresOnTimestamp) > Date.now() + 3_600_000);
  });
});
