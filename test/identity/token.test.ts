/**
 * The token endpoints and discovery as a curl-style client sees them (§4.9,
 * §2.6, §2.7), the AAD error table of the reference, and fuzzing.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPrivateKey, randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { request } from 'undici';
import { claimsOf, getJson, headerOf, postForm, startForTest, suiteCleanup, type JsonAnswer, type StartedIdentity } from './helpers.ts';
import { addAppRole, addClientCertificate, addClientSecret, createApi, createClient, grantAppRole } from '../../src/identity/manage.ts';
import { createSelfSignedKey } from '../../src/identity/keys.ts';
import { GUID } from '../../src/identity/directory/index.ts';

const DEMO_SCOPE = 'api://offcloud-demo-api/.default';

function assertAadError(answer: JsonAnswer, status: number, error: string, code: number): void {
  assert.equal(answer.status, status, JSON.stringify(answer.body));
  assert.equal(answer.body.error, error);
  assert.deepEqual(answer.body.error_codes, [code]);
  assert.match(String(answer.body.error_description), new RegExp(`^AADSTS${code}: `));
  assert.match(String(answer.body.trace_id), GUID);
  assert.match(String(answer.body.correlation_id), GUID);
  assert.match(String(answer.body.timestamp), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$/);
  // A Retry-After header would make MSAL throttle the request (reference §1.4).
  assert.equal(answer.headers['retry-after'], undefined);
}

describe('token endpoint and discovery', () => {
  let id: StartedIdentity;
  let granted: { appId: string; secret: string; principalId: string };
  let other: { appId: string; secret: string };
  let demoApiId: string;
  let v1Api: { appId: string; uri: string };
  let openApi: { appId: string; uri: string };
  const cleanup = suiteCleanup(after);
  const tokenPath = () => `/${id.tenantId}/oauth2/v2.0/token`;
  const specRequest = (overrides: Record<string, string> = {}) => ({
    grant_type: 'client_credentials',
    client_id: granted.appId,
    client_secret: granted.secret,
    audience: 'api://offcloud-demo-api',
    scope: DEMO_SCOPE,
    ...overrides,
  });

  before(async () => {
    id = await startForTest(cleanup);
    const made = await id.change((d) => {
      const g = createClient(d, { displayName: 'granted' });
      grantAppRole(d, g.client.appId, 'api://offcloud-demo-api', 'Demo.Read.All');
      const o = createClient(d, { displayName: 'not granted' });
      const legacy = createApi(d, { displayName: 'v1 API', identifierUri: 'https://legacy.example/api', accessTokenAcceptedVersion: 1 });
      addAppRole(d, legacy.appId, { value: 'Legacy.Write' });
      grantAppRole(d, g.client.appId, legacy.appId, 'Legacy.Write');
      const open = createApi(d, { displayName: 'open API', identifierUri: 'api://open' });
      addAppRole(d, open.appId, { value: 'Open.Read' });
      return { g, o, legacy, open };
    });
    granted = { appId: made.g.client.appId, secret: made.g.secret, principalId: made.g.client.servicePrincipalId };
    other = { appId: made.o.client.appId, secret: made.o.secret };
    demoApiId = (await id.directory()).apis[0]!.appId;
    v1Api = { appId: made.legacy.appId, uri: 'https://legacy.example/api' };
    openApi = { appId: made.open.appId, uri: 'api://open' };
  });

  test('R-TOKEN-1 R-TOKEN-2 the spec request (with audience) answers exactly token_type, expires_in, ext_expires_in, access_token', async () => {
    const answer = await postForm(id, tokenPath(), specRequest());
    assert.equal(answer.status, 200);
    assert.deepEqual(Object.keys(answer.body).sort(), ['access_token', 'expires_in', 'ext_expires_in', 'token_type']);
    assert.equal(answer.body.token_type, 'Bearer');
    assert.ok(Number.isInteger(answer.body.expires_in) && (answer.body.expires_in as number) > 0);
    assert.ok(Number.isInteger(answer.body.ext_expires_in));
    assert.equal(answer.body.refresh_token, undefined);
    assert.match(String(answer.body.access_token), /^[\w-]+\.[\w-]+\.[\w-]+$/);
    assert.match(String(answer.headers['content-type']), /^application\/json/);
  });

  test('R-TOKEN-3 R-TOKEN-5 the v2 token carries roles, aud = API app id, azp = client app id, v2 issuer, header kid only', async () => {
    const answer = await postForm(id, tokenPath(), specRequest());
    const token = String(answer.body.access_token);
    const claims = claimsOf(token);
    assert.deepEqual(claims.roles, ['Demo.Read.All']);
    assert.equal(claims.aud, demoApiId);
    assert.equal(claims.azp, granted.appId);
    assert.equal(claims.azpacr, '1');
    assert.equal(claims.ver, '2.0');
    assert.equal(claims.iss, `https://login.microsoftonline.com/${id.tenantId}/v2.0`);
    assert.equal(claims.tid, id.tenantId);
    assert.equal(claims.oid, granted.principalId);
    assert.equal(claims.sub, granted.principalId);
    assert.equal(claims.idtyp, 'app');
    assert.equal(claims.nbf, claims.iat);
    assert.equal((claims.exp as number) - (claims.iat as number), answer.body.expires_in);
    assert.equal(typeof claims.uti, 'string');
    for (const userOnly of ['scp', 'upn', 'name', 'appid']) assert.equal(claims[userOnly], undefined, userOnly);
    const header = headerOf(token);
    assert.equal(header.alg, 'RS256');
    assert.equal(header.typ, 'JWT');
    assert.equal(typeof header.kid, 'string');
    assert.equal(header.x5t, undefined);
  });

  test('R-TOKEN-4 API registrations define app roles with a GUID id, a value and allowedMemberTypes Application', async () => {
    const directory = await id.directory();
    const demo = directory.apis.find((a) => a.appId === demoApiId)!;
    assert.equal(demo.accessTokenAcceptedVersion, 2);
    assert.equal(demo.appRoles.length, 1);
    const [role] = demo.appRoles;
    assert.match(role!.id, GUID);
    assert.equal(role!.value, 'Demo.Read.All');
    assert.deepEqual(role!.allowedMemberTypes, ['Application']);
    assert.equal(role!.isEnabled, true);
  });

  test('R-TOKEN-5 an API with accessTokenAcceptedVersion 1 gets v1 tokens (sts issuer, appid, aud as requested, x5t header)', async () => {
    const answer = await postForm(id, tokenPath(), specRequest({ scope: `${v1Api.uri}/.default`, audience: v1Api.uri }));
    assert.equal(answer.status, 200);
    const token = String(answer.body.access_token);
    const claims = claimsOf(token);
    assert.equal(claims.ver, '1.0');
    assert.equal(claims.iss, `https://sts.windows.net/${id.tenantId}/`);
    assert.equal(claims.idp, claims.iss);
    assert.equal(claims.aud, v1Api.uri);
    assert.equal(claims.appid, granted.appId);
    assert.equal(claims.appidacr, '1');
    assert.deepEqual(claims.roles, ['Legacy.Write']);
    assert.equal(claims.azp, undefined);
    assert.equal(headerOf(token).x5t, headerOf(token).kid);
  });

  test('R-TOKEN-5 the v1 endpoint takes resource= and answers the v1 fields as strings; the token version follows the API', async () => {
    const path = `/${id.tenantId}/oauth2/token`;
    const v1 = await postForm(id, path, { grant_type: 'client_credentials', client_id: granted.appId, client_secret: granted.secret, resource: v1Api.uri });
    assert.equal(v1.status, 200, JSON.stringify(v1.body));
    assert.equal(v1.body.resource, v1Api.uri);
    for (const field of ['expires_in', 'ext_expires_in', 'expires_on', 'not_before']) assert.match(String(v1.body[field]), /^\d+$/, field);
    assert.equal(typeof v1.body.expires_in, 'string');
    assert.equal(claimsOf(String(v1.body.access_token)).ver, '1.0');
    const v2 = await postForm(id, path, {
      grant_type: 'client_credentials',
      client_id: granted.appId,
      client_secret: granted.secret,
      resource: 'api://offcloud-demo-api',
    });
    assert.equal(claimsOf(String(v2.body.access_token)).ver, '2.0');
    assert.equal(claimsOf(String(v2.body.access_token)).aud, demoApiId);
    const missing = await postForm(id, path, { grant_type: 'client_credentials', client_id: granted.appId, client_secret: granted.secret });
    assertAadError(missing, 400, 'invalid_request', 900144);
    assert.match(String(missing.body.error_description), /'resource'/);
  });

  test('R-TOKEN-6 a client without a role of an API that requires one is refused (AADSTS501051); elsewhere its token has no roles claim', async () => {
    const refused = await postForm(id, tokenPath(), specRequest({ client_id: other.appId, client_secret: other.secret }));
    assertAadError(refused, 400, 'invalid_grant', 501051);
    const open = await postForm(id, tokenPath(), specRequest({ client_id: other.appId, client_secret: other.secret, scope: `${openApi.uri}/.default` }));
    assert.equal(open.status, 200);
    const claims = claimsOf(String(open.body.access_token));
    assert.equal(claims.roles, undefined);
    assert.equal(claims.aud, openApi.appId);
  });

  test('R-TOKEN-1 the tenant may be given by domain in any case, the scope by app id, the secret by HTTP Basic', async () => {
    const byDomain = await postForm(id, '/OFFCLOUD.onmicrosoft.COM/oauth2/v2.0/token', specRequest());
    assert.equal(byDomain.status, 200);
    assert.equal(claimsOf(String(byDomain.body.access_token)).tid, id.tenantId);
    const byAppId = await postForm(id, tokenPath(), specRequest({ scope: `${demoApiId}/.default` }));
    assert.equal(claimsOf(String(byAppId.body.access_token)).aud, demoApiId);
    const basic = Buffer.from(`${encodeURIComponent(granted.appId)}:${encodeURIComponent(granted.secret)}`).toString('base64');
    const viaBasic = await postForm(id, tokenPath(), { grant_type: 'client_credentials', scope: DEMO_SCOPE }, { authorization: `Basic ${basic}` });
    assert.equal(viaBasic.status, 200, JSON.stringify(viaBasic.body));
    assert.equal(claimsOf(String(viaBasic.body.access_token)).azp, granted.appId);
    const storage = await postForm(id, tokenPath(), specRequest({ scope: 'https://storage.azure.com/.default' }));
    assert.equal(claimsOf(String(storage.body.access_token)).aud, 'https://storage.azure.com');
  });

  test('R-TOKEN-1 errors follow the AAD table: grant type, tenant, client, secrets, scope, resource', async () => {
    const cases: [Record<string, string>, number, string, number][] = [
      [specRequest({ grant_type: '' }), 400, 'invalid_request', 900144],
      [specRequest({ grant_type: 'password' }), 400, 'unsupported_grant_type', 70003],
      [specRequest({ client_id: '00000000-0000-0000-0000-000000000000' }), 400, 'unauthorized_client', 700016],
      [specRequest({ client_secret: 'wrong' }), 401, 'invalid_client', 7000215],
      [specRequest({ client_secret: other.secret }), 401, 'invalid_client', 7000215],
      [specRequest({ client_secret: '' }), 401, 'invalid_client', 7000218],
      [specRequest({ scope: 'api://offcloud-demo-api' }), 400, 'invalid_scope', 1002012],
      [specRequest({ scope: `${DEMO_SCOPE} https://storage.azure.com/.default` }), 400, 'invalid_scope', 70011],
      [specRequest({ scope: 'api://nothing-here/.default' }), 400, 'invalid_resource', 500011],
    ];
    for (const [fields, status, error, code] of cases) assertAadError(await postForm(id, tokenPath(), fields), status, error, code);
    assertAadError(await postForm(id, '/00000000-0000-0000-0000-0000000000aa/oauth2/v2.0/token', specRequest()), 400, 'invalid_request', 90002);
  });

  test('R-TOKEN-1 an expired secret is refused with AADSTS7000222 while a fresh one of the same client works', async () => {
    const expired = await id.change((d) => addClientSecret(d, granted.appId, -1));
    assertAadError(await postForm(id, tokenPath(), specRequest({ client_secret: expired.value })), 401, 'invalid_client', 7000222);
    const fresh = await id.change((d) => addClientSecret(d, granted.appId, 30));
    assert.equal((await postForm(id, tokenPath(), specRequest({ client_secret: fresh.value }))).status, 200);
  });

  test('R-TOKEN-1 client assertions: a registered certificate signs; wrong audience, issuer, key, lifetime or type are refused', async () => {
    const made = await createSelfSignedKey('assertion test');
    const registered = await id.change((d) => addClientCertificate(d, granted.appId, made.certificatePem));
    const key = createPrivateKey(made.privateKeyPem);
    const now = Math.floor(Date.now() / 1000);
    const endpoint = `${id.issuerUrl}${tokenPath()}`;
    const assertion = (claims: Record<string, unknown> = {}, header: Record<string, unknown> = { 'x5t#S256': registered.thumbprintSha256 }, signWith = key) =>
      new SignJWT({ aud: endpoint, iss: granted.appId, sub: granted.appId, nbf: now, exp: now + 600, jti: randomUUID(), ...claims })
        .setProtectedHeader({ alg: 'PS256', ...header })
        .sign(signWith);
    const withAssertion = async (jwt: string, type = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer') =>
      postForm(id, tokenPath(), {
        grant_type: 'client_credentials',
        client_id: granted.appId,
        client_assertion_type: type,
        client_assertion: jwt,
        scope: DEMO_SCOPE,
      });
    const ok = await withAssertion(await assertion());
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(claimsOf(String(ok.body.access_token)).azpacr, '2');
    const cloudAudience = await withAssertion(await assertion({ aud: `https://login.microsoftonline.com/${id.tenantId}/oauth2/v2.0/token` }));
    assert.equal(cloudAudience.status, 200);
    const other = createPrivateKey((await createSelfSignedKey('impostor')).privateKeyPem);
    assertAadError(await withAssertion(await assertion({ aud: 'https://elsewhere.example/token' })), 401, 'invalid_client', 700027);
    assertAadError(await withAssertion(await assertion({ iss: demoApiId })), 401, 'invalid_client', 700027);
    assertAadError(await withAssertion(await assertion({}, { 'x5t#S256': registered.thumbprintSha256 }, other)), 401, 'invalid_client', 700027);
    assertAadError(await withAssertion(await assertion({}, { x5t: 'bm90LXJlZ2lzdGVyZWQ' })), 401, 'invalid_client', 700027);
    assertAadError(await withAssertion(await assertion({ nbf: now - 7200, exp: now - 3600 })), 401, 'invalid_client', 700024);
    assertAadError(await withAssertion('not.a.jwt'), 401, 'invalid_client', 700027);
    assertAadError(await withAssertion(await assertion(), 'password'), 400, 'invalid_request', 900144);
  });

  test('R-TOKEN-1 fuzzing: duplicates, 1 MB body, JSON body, broken encoding, wrong method, path tricks; JSON errors and the server keeps serving', async () => {
    assertAadError(await postForm(id, tokenPath(), `${new URLSearchParams(specRequest())}&client_id=${other.appId}`), 400, 'invalid_request', 9002313);
    const huge = await postForm(id, tokenPath(), `${new URLSearchParams(specRequest())}&pad=${'a'.repeat(1024 * 1024)}`);
    assert.equal(huge.status, 400);
    assert.equal(huge.body.error, 'invalid_request');
    const json = await request(`${id.issuerUrl}${tokenPath()}`, {
      method: 'POST',
      dispatcher: id.dispatcher,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(specRequest()),
    });
    assertAadError(
      { status: json.statusCode, headers: json.headers, body: (await json.body.json()) as Record<string, unknown> },
      400,
      'invalid_request',
      900144,
    );
    const broken = await postForm(id, tokenPath(), 'grant_type=client_credentials&client_id=%ZZ%&scope=%E0%A4%A');
    assert.ok(broken.status === 400 || broken.status === 401);
    assert.equal(typeof broken.body.error, 'string');
    const numeric = await postForm(id, tokenPath(), { ...specRequest(), client_id: '12345' });
    assertAadError(numeric, 400, 'unauthorized_client', 700016);
    const get = await getJson(`${id.issuerUrl}${tokenPath()}`, { dispatcher: id.dispatcher });
    assertAadError(get, 400, 'invalid_request', 900561);
    for (const path of [
      '/../../etc/passwd',
      `/${id.tenantId}/oauth2/v2.0/%2e%2e/token`,
      '/%00/oauth2/v2.0/token',
      `/${'x'.repeat(5000)}/v2.0/.well-known/openid-configuration`,
    ]) {
      const answer = await getJson(`${id.issuerUrl}${path}`, { dispatcher: id.dispatcher });
      assert.ok(answer.status >= 400 && answer.status < 500, `${path}: ${answer.status}`);
      assert.equal(typeof answer.body.error, 'string');
    }
    assert.equal((await postForm(id, tokenPath(), specRequest())).status, 200);
  });

  test('R-TOKEN-7 discovery v2 and v1 documents name this issuer, its token endpoints and JWKS; unknown tenants get a JSON error', async () => {
    const v2 = await getJson(`${id.issuerUrl}/${id.tenantId}/v2.0/.well-known/openid-configuration`, { dispatcher: id.dispatcher });
    assert.equal(v2.status, 200);
    assert.equal(v2.body.issuer, `https://login.microsoftonline.com/${id.tenantId}/v2.0`);
    assert.equal(v2.body.token_endpoint, `${id.issuerUrl}/${id.tenantId}/oauth2/v2.0/token`);
    assert.equal(v2.body.jwks_uri, `${id.issuerUrl}/${id.tenantId}/discovery/v2.0/keys`);
    assert.equal(typeof v2.body.authorization_endpoint, 'string');
    const v1 = await getJson(`${id.issuerUrl}/offcloud.onmicrosoft.com/.well-known/openid-configuration`, { dispatcher: id.dispatcher });
    assert.equal(v1.body.issuer, `https://sts.windows.net/${id.tenantId}/`);
    assert.equal(v1.body.token_endpoint, `${id.issuerUrl}/${id.tenantId}/oauth2/token`);
    assert.equal(v1.body.jwks_uri, `${id.issuerUrl}/${id.tenantId}/discovery/keys`);
    const unknown = await getJson(`${id.issuerUrl}/not-a-tenant/v2.0/.well-known/openid-configuration`, { dispatcher: id.dispatcher });
    assertAadError(unknown, 400, 'invalid_request', 90002);
    const viaLocalhost = await getJson(`${id.issuerUrl}/${id.tenantId}/v2.0/.well-known/openid-configuration`, {
      dispatcher: id.dispatcher,
      headers: { host: `localhost:${new URL(id.issuerUrl).port}` },
    });
    assert.equal(
      viaLocalhost.body.token_endpoint,
      `https://localhost:${new URL(id.issuerUrl).port}/${id.tenantId}/oauth2/v2.0/token`,
      'endpoints follow the name the client used',
    );
    assert.equal(viaLocalhost.body.issuer, v2.body.issuer, 'the issuer does not');
    const oddHost = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const url = new URL(id.issuerUrl);
      const ask = httpsRequest(
        {
          host: url.hostname,
          port: url.port,
          path: `/${id.tenantId}/v2.0/.well-known/openid-configuration`,
          headers: { host: 'evil/path?x' },
          ca: readFileSync(id.caCertPath),
          servername: 'localhost',
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve(JSON.parse(text) as Record<string, unknown>));
        },
      );
      ask.on('error', reject);
      ask.end();
    });
    assert.equal(oddHost.token_endpoint, v2.body.token_endpoint, 'an odd Host header falls back to the bound origin');
    const instance = await getJson(`${id.issuerUrl}/common/discovery/instance?api-version=1.1&authorization_endpoint=x`, { dispatcher: id.dispatcher });
    assert.equal(instance.body.tenant_discovery_endpoint, `${id.issuerUrl}/common/v2.0/.well-known/openid-configuration`);
    assert.ok(Array.isArray(instance.body.metadata));
  });

  test('R-TOKEN-7 JWKS entries carry kty, use, kid, x5t (certificate SHA-1 thumbprint), n, e and x5c', async () => {
    for (const path of ['discovery/v2.0/keys', 'discovery/keys']) {
      const jwks = await getJson(`${id.issuerUrl}/${id.tenantId}/${path}`, { dispatcher: id.dispatcher });
      const keys = jwks.body.keys as Record<string, unknown>[];
      assert.ok(keys.length >= 1);
      for (const key of keys) {
        assert.equal(key.kty, 'RSA');
        assert.equal(key.use, 'sig');
        assert.equal(key.kid, key.x5t);
        assert.equal(key.d, undefined, 'no private parts');
        const der = Buffer.from((key.x5c as string[])[0]!, 'base64');
        assert.equal(createHash('sha1').update(der).digest('base64url'), key.x5t);
      }
    }
  });
});
