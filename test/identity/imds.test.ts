/**
 * The managed identity endpoint as curl sees it (§4.8, §2.6), its errors
 * (reference §2.4: 400 JSON, never 404/410) and the App Service form.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { claimsOf, getJson, startForTest, suiteCleanup, type JsonAnswer, type StartedIdentity } from './helpers.ts';
import { readMetric } from '../helpers/index.ts';
import { createUserAssignedIdentity } from '../../src/identity/manage.ts';
import type { ManagedIdentity } from '../../src/identity/directory/index.ts';

const METADATA = { Metadata: 'true' };

describe('managed identity endpoint', () => {
  let id: StartedIdentity;
  let system: ManagedIdentity;
  let user: ManagedIdentity;
  const cleanup = suiteCleanup(after);
  const tokenUrl = (query: string, path = '/metadata/identity/oauth2/token') => `${id.imdsUrl}${path}?${query}`;
  const imdsGet = (query: string, headers: Record<string, string> = METADATA, path?: string) => getJson(tokenUrl(query, path), { headers });

  function assertImdsError(answer: JsonAnswer, status: number, error: string, description: RegExp): void {
    assert.equal(answer.status, status, JSON.stringify(answer.body));
    assert.equal(answer.body.error, error);
    assert.match(String(answer.body.error_description), description);
  }

  before(async () => {
    id = await startForTest(cleanup);
    user = await id.change((d) => createUserAssignedIdentity(d, 'worker'));
    system = (await id.directory()).managedIdentities.find((m) => m.kind === 'system')!;
  });

  test('R-IMDS-1 R-IMDS-3 the spec request answers exactly the §2.6 fields, numbers as strings', async () => {
    const answer = await imdsGet(`api-version=2018-02-01&resource=${encodeURIComponent('https://management.azure.com/')}`);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.deepEqual(Object.keys(answer.body).sort(), ['access_token', 'expires_in', 'expires_on', 'not_before', 'refresh_token', 'resource', 'token_type']);
    assert.equal(answer.body.refresh_token, '');
    assert.equal(answer.body.token_type, 'Bearer');
    for (const field of ['expires_in', 'expires_on', 'not_before']) assert.match(String(answer.body[field]), /^\d+$/, field);
    assert.equal(Number(answer.body.expires_on) - Number(answer.body.not_before), Number(answer.body.expires_in));
    assert.ok(Math.abs(Number(answer.body.not_before) - Date.now() / 1000) < 60);
    assert.match(String(answer.body.access_token), /^[\w-]+\.[\w-]+\.[\w-]+$/);
  });

  test('R-IMDS-4 the token is issued for the requested resource, v1-shaped, to the system identity', async () => {
    const answer = await imdsGet(`api-version=2018-02-01&resource=${encodeURIComponent('https://storage.azure.com')}`);
    assert.equal(answer.body.resource, 'https://storage.azure.com');
    const claims = claimsOf(String(answer.body.access_token));
    assert.equal(claims.aud, 'https://storage.azure.com');
    assert.equal(claims.ver, '1.0');
    assert.equal(claims.iss, `https://sts.windows.net/${id.tenantId}/`);
    assert.equal(claims.appid, system.clientId);
    assert.equal(claims.appidacr, '2');
    assert.equal(claims.oid, system.principalId);
    assert.equal(claims.xms_mirid, system.resourceId);
    assert.equal(claims.idtyp, 'app');
    assert.equal(Number(claims.exp), Number(answer.body.expires_on));
  });

  test('R-IMDS-4 user-assigned identities are selected by client_id, object_id or msi_res_id; later api-versions work', async () => {
    const resource = encodeURIComponent('https://vault.azure.net');
    for (const selector of [`client_id=${user.clientId}`, `object_id=${user.principalId}`, `msi_res_id=${encodeURIComponent(user.resourceId)}`]) {
      const answer = await imdsGet(`api-version=2021-02-01&resource=${resource}&${selector}`);
      assert.equal(answer.status, 200, selector);
      assert.equal(claimsOf(String(answer.body.access_token)).oid, user.principalId, selector);
    }
  });

  test('R-IMDS-1 the SDK forms of the path (trailing slash, doubled leading slash, extra parameters) are accepted', async () => {
    const query = `api-version=2018-02-01&resource=${encodeURIComponent('https://storage.azure.com')}&xms_cc=cp1&token_sha256_to_refresh=abc`;
    for (const path of ['/metadata/identity/oauth2/token/', '//metadata/identity/oauth2/token/', '//metadata//identity/oauth2/token']) {
      assert.equal((await imdsGet(query, METADATA, path)).status, 200, path);
    }
  });

  test('R-IMDS-2 without Metadata: true the request is refused with 400 JSON, also the bare probe', async () => {
    const query = `api-version=2018-02-01&resource=${encodeURIComponent('https://storage.azure.com')}`;
    assertImdsError(await imdsGet(query, {}), 400, 'invalid_request', /Required metadata header not specified/);
    assertImdsError(await imdsGet(query, { Metadata: 'false' }), 400, 'invalid_request', /Required metadata header not specified/);
    const probe = await getJson(`${id.imdsUrl}/metadata/identity/oauth2/token`, { headers: { accept: 'application/json' } });
    assertImdsError(probe, 400, 'invalid_request', /Required metadata header not specified/);
    assertImdsError(await imdsGet(query, { ...METADATA, 'x-forwarded-for': '10.0.0.1' }), 400, 'invalid_request', /X-Forwarded-For/);
    const withAuth = await imdsGet(query, { ...METADATA, authorization: 'Bearer whatever' });
    assert.equal(withAuth.status, 200, 'no other credential is needed or checked');
  });

  test('a request relayed by a proxy is refused whichever header marks it: X-Forwarded-For or Forwarded, in any case, even empty', async () => {
    const query = `api-version=2018-02-01&resource=${encodeURIComponent('https://storage.azure.com')}`;
    const relayed: [Record<string, string>, RegExp][] = [
      [{ 'x-forwarded-for': '10.0.0.1' }, /X-Forwarded-For/],
      [{ 'X-Forwarded-For': '' }, /X-Forwarded-For/],
      [{ forwarded: 'for=10.0.0.1' }, /Forwarded/],
      [{ Forwarded: 'for="[2001:db8::1]";proto=http;by=203.0.113.43' }, /Forwarded/],
      [{ FORWARDED: '' }, /Forwarded/],
    ];
    for (const [headers, message] of relayed) {
      assertImdsError(await imdsGet(query, { ...METADATA, ...headers }), 400, 'invalid_request', message);
    }
    assert.equal((await imdsGet(query, { ...METADATA, 'x-forwarded-proto': 'http' })).status, 200, 'a header naming no client is not a relay');
  });

  test('R-IMDS-1 api-version and resource are required; wrong ones, unknown resources and identities get 400 JSON, never 404/410', async () => {
    const storage = encodeURIComponent('https://storage.azure.com');
    assertImdsError(await imdsGet(`resource=${storage}`), 400, 'invalid_request', /api-version/);
    assertImdsError(await imdsGet(`api-version=2017-09-01&resource=${storage}`), 400, 'invalid_request', /api-version/);
    assertImdsError(await imdsGet(`api-version=latest&resource=${storage}`), 400, 'invalid_request', /api-version/);
    assertImdsError(await imdsGet('api-version=2018-02-01'), 400, 'invalid_request', /resource/);
    assertImdsError(await imdsGet(`api-version=2018-02-01&resource=${encodeURIComponent('https://unknown.example')}`), 400, 'invalid_resource', /AADSTS500011/);
    assertImdsError(
      await imdsGet(`api-version=2018-02-01&resource=${storage}&client_id=00000000-0000-0000-0000-000000000000`),
      400,
      'invalid_request',
      /Identity not found/,
    );
    assertImdsError(
      await imdsGet(`api-version=2018-02-01&resource=${storage}&resource=https%3A%2F%2Fvault.azure.net`),
      400,
      'invalid_request',
      /more than once/,
    );
    assertImdsError(await imdsGet(`api-version=2018-02-01&resource=%E0%A4%A&resource2=%ZZ`), 400, 'invalid_resource', /AADSTS500011/);
    assertImdsError(await getJson(`${id.imdsUrl}/metadata/../../etc/passwd`, { headers: METADATA }), 400, 'invalid_request', /Unknown endpoint/);
    const post = await request(tokenUrl(`api-version=2018-02-01&resource=${storage}`), { method: 'POST', headers: METADATA, body: 'x'.repeat(64 * 1024) });
    assert.equal(post.statusCode, 400);
    assert.equal(((await post.body.json()) as Record<string, unknown>).error, 'invalid_request');
    assert.equal((await imdsGet(`api-version=2018-02-01&resource=${storage}`)).status, 200, 'still serving');
  });

  test('R-IMDS-4 App Service form: X-IDENTITY-HEADER and api-version 2019-08-01, expires_on as a Unix-time string', async () => {
    const published = id.running.facts!.identity!;
    const url = `${published.identityEndpoint}?api-version=2019-08-01&resource=${encodeURIComponent('https://vault.azure.net')}`;
    const answer = await getJson(url, { headers: { 'x-identity-header': published.identityHeader } });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.match(String(answer.body.expires_on), /^\d+$/);
    assert.equal(answer.body.client_id, system.clientId);
    assert.equal(claimsOf(String(answer.body.access_token)).aud, 'https://vault.azure.net');
    assertImdsError(await getJson(url, { headers: { 'x-identity-header': 'wrong' } }), 401, 'invalid_request', /X-IDENTITY-HEADER/);
    assertImdsError(await getJson(url, {}), 401, 'invalid_request', /X-IDENTITY-HEADER/);
    const oldVersion = url.replace('2019-08-01', '2017-09-01');
    assertImdsError(await getJson(oldVersion, { headers: { 'x-identity-header': published.identityHeader } }), 400, 'invalid_request', /api-version/);
  });

  test('metrics: tokens issued by IMDS are counted by grant, refusals by status', async () => {
    const before = (await readMetric(id.imdsUrl, 'offcloud_identity_tokens_issued_total', { grant: 'managed_identity' })) ?? 0;
    for (let i = 0; i < 2; i++) assert.equal((await imdsGet(`api-version=2018-02-01&resource=${encodeURIComponent('https://vault.azure.net')}`)).status, 200);
    assert.equal((await imdsGet('api-version=2018-02-01')).status, 400);
    assert.equal(await readMetric(id.imdsUrl, 'offcloud_identity_tokens_issued_total', { grant: 'managed_identity', component: 'identity' }), before + 2);
    assert.ok(((await readMetric(id.imdsUrl, 'offcloud_http_requests_total', { status: '400' })) ?? 0) >= 1);
  });
});
