/**
 * The directory: what a first start seeds, the data-plane role lookups
 * storage uses, the `offcloud identity …` management commands (followed by
 * a running server without restart), a YAML directory given with
 * --directory, and the files' permissions.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify as stringifyYaml } from 'yaml';
import { Agent, request } from 'undici';
import { offcloudAtOnce, tempDataDir } from '../helpers/index.ts';
import { claimsOf, headerOf, postForm, startForTest } from './helpers.ts';
import { startIdentity } from '../../src/identity/start.ts';
import {
  checkClientSecret,
  dataRoleAssignmentsFor,
  DEFAULT_STORAGE_ACCOUNT,
  loadDirectory,
  openDirectory,
  STORAGE_RESOURCE,
  WELL_KNOWN_RESOURCES,
} from '../../src/identity/directory/index.ts';
import { ConfigError, UsageError } from '../../src/common/errors.ts';
import { createIdentityCommands } from '../../src/identity/cli.ts';
import { createSelfSignedKey, openSigningKeys } from '../../src/identity/keys.ts';
import { createHash } from 'node:crypto';

const CLI = fileURLToPath(new URL('../../bin/offcloud.js', import.meta.url));

interface CommandOutput {
  code: number;
  out: string;
  fields: Record<string, string>;
  err: string;
}

function fieldsOf(out: string): Record<string, string> {
  return Object.fromEntries(
    out.split('\n').flatMap((line) => {
      const at = line.indexOf(': ');
      return at > 0 ? [[line.slice(0, at), line.slice(at + 2)]] : [];
    }),
  );
}

/**
 * `offcloud identity <command>` in this process, its output collected; a usage
 * error gives code 2 as the binary does (the binary loads every component, so
 * the suite spawns it once, in the start test).
 */
async function offcloud(args: string[]): Promise<CommandOutput> {
  let out = '';
  const commands = createIdentityCommands((text) => (out += text));
  const [name, ...rest] = args;
  try {
    const code = await commands[name!]!.run(rest);
    return { code, out, fields: fieldsOf(out), err: '' };
  } catch (err) {
    if (err instanceof UsageError) return { code: 2, out, fields: fieldsOf(out), err: err.message };
    throw err;
  }
}

test('R-TOKEN-4 a first start seeds a tenant, a demo API with one role, a granted client, the system identity and storage data roles', async (t) => {
  const dataDir = await tempDataDir(t);
  const seeds = await Promise.all([openDirectory(dataDir).ensure(), openDirectory(dataDir).ensure()]);
  const seed = seeds.find((s) => s !== null)!;
  assert.equal(seeds.filter((s) => s !== null).length, 1, 'processes starting together agree on one seed');
  assert.deepEqual(
    await openDirectory(dataDir).demoClient(),
    { appId: seed.directory.clients[0]!.appId, secret: seed.demoClientSecret },
    'the demo secret kept is that of the seed that made the directory',
  );
  const [a, b] = await Promise.all([loadDirectory(dataDir), loadDirectory(dataDir)]);
  assert.equal(a.defaultTenantId, b.defaultTenantId);
  assert.equal(a.defaultTenantId, seed.directory.defaultTenantId);
  assert.equal(a.tenants.length, 1);
  assert.equal(a.apis.length, 1);
  assert.equal(a.apis[0]!.appRoles.length, 1);
  assert.equal(a.clients.length, 1);
  const client = a.clients[0]!;
  assert.deepEqual(a.appRoleAssignments, [{ principalId: client.servicePrincipalId, resourceAppId: a.apis[0]!.appId, appRoleId: a.apis[0]!.appRoles[0]!.id }]);
  const system = a.managedIdentities.find((m) => m.kind === 'system')!;
  const scope = `/storage/${DEFAULT_STORAGE_ACCOUNT}`;
  for (const principal of [system.principalId, client.servicePrincipalId]) {
    assert.deepEqual(dataRoleAssignmentsFor(a, principal, scope), [{ principalId: principal, role: 'Storage Blob Data Contributor', scope }]);
    assert.equal(dataRoleAssignmentsFor(a, principal.toUpperCase(), `${scope}/photos`).length, 1, 'a container is inside its account');
    assert.equal(dataRoleAssignmentsFor(a, principal, '/storage/devstoreaccount10').length, 0, 'scopes match at path boundaries');
  }
  assert.equal(STORAGE_RESOURCE.appId, 'e406a681-f3d4-42a8-90b6-c2b029497af1');
  assert.deepEqual(
    WELL_KNOWN_RESOURCES.map((r) => r.identifierUris[0]),
    ['https://storage.azure.com', 'https://management.azure.com', 'https://vault.azure.net'],
  );
  const file = join(dataDir, 'identity', 'directory.json');
  assert.ok(!(await readFile(file, 'utf8')).includes(seed.demoClientSecret), 'no secret is stored in clear');
  assert.equal(checkClientSecret(client, seed.demoClientSecret).ok, true);
  assert.equal((await stat(file)).mode & 0o777, 0o600);
});

test('R-TOKEN-4 R-TOKEN-6 management commands print ids and a secret once; a running server follows them without restart', async (t) => {
  const id = await startForTest(t);
  const dir = ['--data-dir', id.dataDir];
  const app = await offcloud(['app', 'create', '--name', 'orders', '--identifier-uri', 'api://orders', ...dir]);
  assert.equal(app.code, 0, app.err);
  const role = await offcloud(['role', 'add', '--app', 'api://orders', '--value', 'Orders.Read', ...dir]);
  const client = await offcloud(['client', 'create', '--name', 'shop', ...dir]);
  const secretLine = client.fields['secret (shown once)']!;
  assert.ok(secretLine.length >= 30);
  const grant = await offcloud(['grant', '--client', client.fields.appId!, '--app', app.fields.appId!, '--role', 'Orders.Read', ...dir]);
  assert.equal(grant.fields.appRoleId, role.fields.roleId);
  const extra = await offcloud(['secret', 'add', '--client', client.fields.appId!, '--days', '30', ...dir]);
  const certFile = join(id.dataDir, 'client.crt');
  const made = await createSelfSignedKey('cli certificate');
  await writeFile(certFile, made.certificatePem);
  const cert = await offcloud(['cert', 'add', '--client', client.fields.appId!, '--cert', certFile, ...dir]);
  assert.equal(cert.fields['x5t (SHA-1)'], createHash('sha1').update(made.der).digest('base64url'));
  assert.equal((await offcloud(['cert', 'add', '--client', client.fields.appId!, '--cert', join(id.dataDir, 'missing.crt'), ...dir])).code, 2);
  const identity = await offcloud(['identity', 'create', '--name', 'batch', ...dir]);
  const assign = await offcloud([
    'assign',
    '--principal',
    identity.fields.clientId!,
    '--role',
    'Storage Blob Data Reader',
    '--scope',
    '/storage/devstoreaccount1/reports',
    ...dir,
  ]);
  assert.equal(assign.fields.principalId, identity.fields.principalId, 'a managed identity client id resolves to its object id');

  for (const secret of [secretLine, extra.fields['secret (shown once)']!]) {
    const answer = await postForm(id, `/${id.tenantId}/oauth2/v2.0/token`, {
      grant_type: 'client_credentials',
      client_id: client.fields.appId!,
      client_secret: secret,
      scope: 'api://orders/.default',
    });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const claims = claimsOf(String(answer.body.access_token));
    assert.deepEqual(claims.roles, ['Orders.Read']);
    assert.equal(claims.aud, app.fields.appId);
  }
  const directory = await id.directory();
  assert.deepEqual(dataRoleAssignmentsFor(directory, identity.fields.principalId!, '/storage/devstoreaccount1/reports'), [
    { principalId: identity.fields.principalId, role: 'Storage Blob Data Reader', scope: '/storage/devstoreaccount1/reports' },
  ]);

  const list = await offcloud(['list', ...dir]);
  const listed = JSON.parse(list.out) as { clients: { appId: string; secrets: Record<string, unknown>[] }[] };
  const shop = listed.clients.find((c) => c.appId === client.fields.appId)!;
  assert.equal(shop.secrets.length, 2);
  assert.equal(shop.secrets[0]!.hash, undefined, 'list shows no hashes');

  const before = await postForm(id, `/${id.tenantId}/oauth2/v2.0/token`, {
    grant_type: 'client_credentials',
    client_id: client.fields.appId!,
    client_secret: secretLine,
    scope: 'api://orders/.default',
  });
  const rotate = await offcloud(['keys', 'rotate', ...dir]);
  assert.equal(rotate.code, 0, rotate.err);
  const afterRotation = await postForm(id, `/${id.tenantId}/oauth2/v2.0/token`, {
    grant_type: 'client_credentials',
    client_id: client.fields.appId!,
    client_secret: secretLine,
    scope: 'api://orders/.default',
  });
  assert.equal(headerOf(String(afterRotation.body.access_token)).kid, rotate.fields['new kid']);
  assert.match(rotate.fields['retired (still published until their tokens expire)']!, new RegExp(String(headerOf(String(before.body.access_token)).kid)));

  const bad = await offcloud(['assign', '--principal', 'nobody', '--role', 'Owner', '--scope', '/x', ...dir]);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /role must be one of/);
  const unknown = await offcloud(['grant', '--client', client.fields.appId!, '--app', 'api://missing', '--role', 'x', ...dir]);
  assert.equal(unknown.code, 2);
  const signingKeys = await stat(join(id.dataDir, 'identity', 'signing-keys.json'));
  assert.equal(signingKeys.mode & 0o777, 0o600, 'private keys are readable by the owner only');
});

test('R-TOKEN-4 directory edits and key rotations by 10 `offcloud identity` processes at once all land (each file edited under its lock)', async (t) => {
  const dataDir = await tempDataDir(t);
  const dir = ['--data-dir', dataDir];
  await openDirectory(dataDir).ensure();
  const keys = openSigningKeys(dataDir);
  await keys.ensure();
  const firstKey = (await keys.current()).active.kid;
  const clients = Array.from({ length: 4 }, (_, i) => `client-${i}`);
  const apis = Array.from({ length: 4 }, (_, i) => `api-${i}`);
  const printed = await offcloudAtOnce([
    ...clients.map((name) => ['identity', 'client', 'create', '--name', name, ...dir]),
    ...apis.map((name) => ['identity', 'app', 'create', '--name', name, ...dir]),
    ['identity', 'keys', 'rotate', ...dir],
    ['identity', 'keys', 'rotate', ...dir],
  ]);
  const directory = await loadDirectory(dataDir);
  for (const name of clients) assert.equal(directory.clients.filter((c) => c.displayName === name).length, 1, name);
  for (const name of apis) assert.equal(directory.apis.filter((a) => a.displayName === name).length, 1, name);
  const newKids = printed.slice(-2).map((out) => fieldsOf(out)['new kid']);
  const published = (await keys.current()).jwks.keys.map((k) => k.kid);
  assert.deepEqual([...published].sort(), [firstKey, ...newKids].sort(), 'every rotation published its key');
  assert.ok(newKids.includes((await keys.current()).active.kid), 'the key of the last rotation signs');
  const left = (await readdir(join(dataDir, 'identity'))).filter((name) => /\.(lock|tmp|new)$/.test(name));
  assert.deepEqual(left, [], 'no lock or temporary file left');
});

test('R-TOKEN-4 a YAML directory given with --directory: ids and hashes may be left out, secrets given in clear for fixtures', async (t) => {
  const dataDir = await tempDataDir(t);
  const file = join(dataDir, 'directory.yaml');
  const tenantId = '7d8a1a6e-5f7c-4c55-9d7e-2a6b3f1c0d11';
  await writeFile(
    file,
    stringifyYaml({
      tenants: [{ id: tenantId.toUpperCase(), domain: 'Fixture.example' }],
      apis: [
        {
          displayName: 'inventory',
          identifierUris: ['api://inventory'],
          accessTokenAcceptedVersion: 2,
          appRoles: [{ id: '0c5b8f8e-1111-4222-8333-944445555666', value: 'Inventory.Read' }],
        },
      ],
      clients: [{ appId: '5b7c2d1e-0000-4000-8000-000000000001', displayName: 'ci', secrets: [{ value: 'fixture-secret-value' }] }],
      appRoleAssignments: [],
      managedIdentities: [{ kind: 'system', name: 'vm' }],
    }),
  );
  const store = openDirectory(dataDir, file);
  const directory = await store.current();
  assert.equal(directory.defaultTenantId, tenantId);
  assert.equal(checkClientSecret(directory.clients[0]!, 'fixture-secret-value').ok, true);
  const id = await startForTest(t, { dataDir, directory: file });
  assert.equal(id.tenantId, tenantId);
  const answer = await postForm(id, '/fixture.example/oauth2/v2.0/token', {
    grant_type: 'client_credentials',
    client_id: '5b7c2d1e-0000-4000-8000-000000000001',
    client_secret: 'fixture-secret-value',
    scope: 'api://inventory/.default',
  });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  assert.equal(claimsOf(String(answer.body.access_token)).roles, undefined, 'nothing granted, nothing in roles');

  await writeFile(file, 'tenants: [{ id: not-a-guid }]\n');
  await assert.rejects(startIdentity({ dataDir, directory: file, port: 0, imdsPort: 0, logLevel: 'silent' }), (err: unknown) => {
    assert.ok(err instanceof ConfigError);
    assert.match(err.message, /tenants\[0\]\.id must be a GUID/);
    return true;
  });
});

test('R-TOKEN-1 `offcloud identity` starts both servers on ports 0 and prints the URLs, tenant and CA file; `--issuer-style local` issues this origin', async (t) => {
  const dataDir = await tempDataDir(t);
  const child = spawn(
    process.execPath,
    [CLI, 'identity', '--port', '0', '--imds-port', '0', '--data-dir', dataDir, '--issuer-style', 'local', '--log-level', 'silent'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGTERM');
  });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('managed identity (IMDS)')) resolve();
    });
    child.on('close', () => reject(new Error(`exited early: ${out}`)));
  });
  const issuer = /(https:\/\/127\.0\.0\.1:\d+)\s/.exec(out)![1]!;
  const tenant = /· tenant: ([0-9a-f-]{36})/.exec(out)![1]!;
  assert.match(out, /ca\.crt/);
  assert.match(out, /AZURE_POD_IDENTITY_AUTHORITY_HOST: http:\/\/127\.0\.0\.1:\d+/);
  const secret = /· demo client secret: (\S+)/.exec(out)![1]!;
  const clientId = /demo client: ([0-9a-f-]{36})/.exec(out)![1]!;
  const dispatcher = new Agent({ connect: { ca: await readFile(join(dataDir, 'ca', 'ca.crt'), 'utf8') } });
  t.after(() => dispatcher.close());
  const answer = await request(`${issuer}/${tenant}/oauth2/v2.0/token`, {
    method: 'POST',
    dispatcher,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: secret,
      scope: 'api://offcloud-demo-api/.default',
    }).toString(),
  });
  const body = (await answer.body.json()) as { access_token: string };
  assert.equal(claimsOf(body.access_token).iss, `${issuer}/${tenant}/v2.0`);
  child.kill('SIGTERM');
  assert.equal(await exited, 0);
});
