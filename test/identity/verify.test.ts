/**
 * The verifier (R-TOKEN-7, §5 "The API must verify the token"): real tokens
 * of the issuer pass in process and over JWKS; forged, expired, foreign and
 * misaddressed ones fail with their codes; key rotation keeps old tokens
 * valid; the preHandler protects a route by app role.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import { createRemoteJWKSet, customFetch, generateKeyPair, jwtVerify, SignJWT, type FetchImplementation } from 'jose';
import { fetch as undiciFetch } from 'undici';
import { claimsOf, getJson, headerOf, postForm, startForTest, suiteCleanup, type StartedIdentity } from './helpers.ts';
import { addAppRole, createApi, createClient, grantAppRole } from '../../src/identity/manage.ts';
import { openSigningKeys } from '../../src/identity/keys.ts';
import { identityIssuers } from '../../src/identity/issuer.ts';
import { createTokenVerifier, TokenVerificationError, type TokenVerifier, type TokenVerificationErrorCode } from '../../src/identity/verify.ts';
import { appRolesPlugin, requireAppRoles, verifiedTokenOf } from '../../src/identity/plugin.ts';

async function rejects(verifier: TokenVerifier, token: string, code: TokenVerificationErrorCode, overrides = {}): Promise<void> {
  await assert.rejects(verifier.verify(token, overrides), (err: unknown) => {
    assert.ok(err instanceof TokenVerificationError, String(err));
    assert.equal(err.code, code, err.message);
    assert.ok(err.detail.length > 0);
    return true;
  });
}

describe('token verifier', () => {
  let id: StartedIdentity;
  let client: { appId: string; secret: string };
  let demoApiId: string;
  let remote: TokenVerifier;
  let local: TokenVerifier;
  const cleanup = suiteCleanup(after);

  const demoToken = async (scope = 'api://offcloud-demo-api/.default') => {
    const answer = await postForm(id, `/${id.tenantId}/oauth2/v2.0/token`, {
      grant_type: 'client_credentials',
      client_id: client.appId,
      client_secret: client.secret,
      scope,
    });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return String(answer.body.access_token);
  };
  /** A token with the issuer's own key and chosen claims, for lifetime and issuer cases. */
  const signedByIssuer = async (claims: Record<string, unknown>) => {
    const keys = await openSigningKeys(id.dataDir).current();
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({
      aud: demoApiId,
      iss: identityIssuers(id.tenantId)[1],
      tid: id.tenantId,
      oid: client.appId,
      iat: now,
      nbf: now,
      exp: now + 600,
      ...claims,
    })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: keys.active.kid })
      .sign(keys.active.privateKey);
  };

  before(async () => {
    id = await startForTest(cleanup);
    const made = await id.change((d) => {
      const c = createClient(d, { displayName: 'verifier client' });
      grantAppRole(d, c.client.appId, 'api://offcloud-demo-api', 'Demo.Read.All');
      const api = createApi(d, { displayName: 'no roles granted', identifierUri: 'api://roleless' });
      addAppRole(d, api.appId, { value: 'Roleless.Admin' });
      return c;
    });
    client = { appId: made.client.appId, secret: made.secret };
    demoApiId = (await id.directory()).apis[0]!.appId;
    const common = { issuers: identityIssuers(id.tenantId), audiences: [demoApiId, 'https://storage.azure.com'], tenantId: id.tenantId };
    remote = createTokenVerifier({ ...common, keys: { jwksUri: id.running.facts!.identity!.jwksUri, caCertPath: id.caCertPath, cooldownSeconds: 0 } });
    const store = openSigningKeys(id.dataDir);
    local = createTokenVerifier({ ...common, keys: { jwks: async () => (await store.current()).jwks } });
  });

  test('R-TOKEN-7 a resource server with jose.createRemoteJWKSet on the discovery jwks_uri accepts the token (iss, aud checked)', async () => {
    const discovery = await getJson(`${id.issuerUrl}/${id.tenantId}/v2.0/.well-known/openid-configuration`, { dispatcher: id.dispatcher });
    const fetchWithCa: FetchImplementation = (url, options) =>
      undiciFetch(url, { ...options, dispatcher: id.dispatcher } as unknown as Parameters<typeof undiciFetch>[1]) as unknown as Promise<Response>;
    const jwks = createRemoteJWKSet(new URL(String(discovery.body.jwks_uri)), { [customFetch]: fetchWithCa });
    const { payload } = await jwtVerify(await demoToken(), jwks, { issuer: String(discovery.body.issuer), audience: demoApiId, algorithms: ['RS256'] });
    assert.deepEqual(payload.roles, ['Demo.Read.All']);
  });

  test('R-TOKEN-7 the verifier accepts v2 and v1 tokens remotely and in process, with typed claims', async () => {
    const v2 = await demoToken();
    const v1 = await demoToken('https://storage.azure.com/.default');
    for (const verifier of [remote, local]) {
      const a = await verifier.verify(v2, { requiredRoles: ['Demo.Read.All'] });
      assert.equal(a.version, '2.0');
      assert.equal(a.clientAppId, client.appId);
      assert.deepEqual(a.roles, ['Demo.Read.All']);
      assert.equal(a.tenantId, id.tenantId);
      const b = await verifier.verify(v1);
      assert.equal(b.version, '1.0');
      assert.equal(b.clientAppId, client.appId);
      assert.deepEqual(b.roles, []);
      assert.equal(b.principalId, claimsOf(v1).oid);
    }
  });

  test('R-TOKEN-7 forged and misaddressed tokens are rejected: foreign key, alg none, HS256, wrong audience, issuer, tenant, expired, not yet valid, malformed, missing role', async () => {
    const good = await demoToken();
    const foreign = await generateKeyPair('RS256');
    const sameKid = await new SignJWT(claimsOf(good)).setProtectedHeader({ alg: 'RS256', kid: String(headerOf(good).kid) }).sign(foreign.privateKey);
    const otherKid = await new SignJWT(claimsOf(good)).setProtectedHeader({ alg: 'RS256', kid: 'foreign' }).sign(foreign.privateKey);
    const none = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${good.split('.')[1]}.`;
    const hs256 = await new SignJWT(claimsOf(good)).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode('k'.repeat(32)));
    const [, payload, signature] = good.split('.');
    const tampered = `${good.split('.')[0]}.${Buffer.from(JSON.stringify({ ...claimsOf(good), roles: ['Admin'] })).toString('base64url')}.${signature}`;
    const now = Math.floor(Date.now() / 1000);
    for (const verifier of [remote, local]) {
      await rejects(verifier, sameKid, 'invalid_signature');
      await rejects(verifier, tampered, 'invalid_signature');
      await rejects(verifier, otherKid, 'unknown_key');
      await rejects(verifier, none, 'unsupported_algorithm');
      await rejects(verifier, hs256, 'unsupported_algorithm');
      await rejects(verifier, good, 'invalid_audience', { audiences: ['api://someone-else'] });
      await rejects(verifier, good, 'missing_role', { requiredRoles: ['Demo.Write.All'] });
      await rejects(verifier, await signedByIssuer({ iss: 'https://evil.example/' }), 'invalid_issuer');
      await rejects(verifier, await signedByIssuer({ tid: '00000000-0000-0000-0000-000000000000' }), 'wrong_tenant');
      await rejects(verifier, await signedByIssuer({ iat: now - 7200, nbf: now - 7200, exp: now - 3600 }), 'expired');
      await rejects(verifier, await signedByIssuer({ nbf: now + 3600, exp: now + 7200 }), 'not_yet_valid');
      await rejects(verifier, await signedByIssuer({ oid: undefined }), 'missing_claim');
      await rejects(verifier, 'not-a-jwt', 'malformed');
      await rejects(verifier, `e30K!.${payload}.${signature}`, 'malformed');
    }
    // Within the skew an expired token still passes, as the Microsoft validators allow.
    assert.ok(await local.verify(await signedByIssuer({ iat: now - 700, nbf: now - 700, exp: now - 60 })));
  });

  test('R-TOKEN-7 key rotation: tokens signed before still verify, new tokens use the new kid, JWKS publishes both', async () => {
    const before = await demoToken();
    await remote.verify(before);
    const rotated = await openSigningKeys(id.dataDir).rotate();
    const afterToken = await demoToken();
    assert.equal(headerOf(afterToken).kid, rotated.kid);
    assert.notEqual(headerOf(before).kid, rotated.kid);
    const jwks = await getJson(`${id.issuerUrl}/${id.tenantId}/discovery/v2.0/keys`, { dispatcher: id.dispatcher });
    const kids = (jwks.body.keys as { kid: string }[]).map((k) => k.kid);
    assert.equal(kids[0], rotated.kid);
    assert.ok(kids.includes(String(headerOf(before).kid)));
    for (const verifier of [remote, local]) {
      assert.ok(await verifier.verify(before));
      assert.ok(await verifier.verify(afterToken));
    }
  });

  test('R-TOKEN-7 tokens are signed on the signing threads: a burst of requests at once all verify, and after a rotation every thread signs with the new key', async () => {
    const burst = () => Promise.all(Array.from({ length: 16 }, () => demoToken()));
    const first = await burst();
    const rotated = await openSigningKeys(id.dataDir).rotate();
    const second = await burst();
    assert.deepEqual(new Set(second.map((token) => headerOf(token).kid)), new Set([rotated.kid]));
    for (const token of [...first, ...second]) assert.ok(await local.verify(token));
  });

  test('R-TOKEN-7 the preHandler protects a route by app role: 200 with the role, 403 without it, 401 without a valid token', async (t) => {
    const api = Fastify();
    t.after(() => api.close());
    api.get('/data', { preHandler: requireAppRoles(local, ['Demo.Read.All']) }, async (request) => ({ caller: verifiedTokenOf(request)?.clientAppId }));
    api.get('/admin', { preHandler: requireAppRoles(local, ['Roleless.Admin'], { audiences: [demoApiId, 'api://roleless'] }) }, async () => ({ ok: true }));
    const token = await demoToken();
    const ok = await api.inject({ url: '/data', headers: { authorization: `Bearer ${token}` } });
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.json().caller, client.appId);
    const forbidden = await api.inject({ url: '/admin', headers: { authorization: `Bearer ${token}` } });
    assert.equal(forbidden.statusCode, 403);
    assert.equal(forbidden.json().error, 'insufficient_scope');
    for (const authorization of [undefined, 'Basic abc', 'Bearer', `Bearer ${token}x`]) {
      const denied = await api.inject({ url: '/data', headers: authorization ? { authorization } : {} });
      assert.equal(denied.statusCode, 401, String(authorization));
      assert.match(String(denied.headers['www-authenticate']), /^Bearer error="invalid_token"/);
    }
  });

  test('R-TOKEN-7 the fastify plugin protects every route of the instance it is registered on, and only those', async (t) => {
    const api = Fastify();
    t.after(() => api.close());
    await api.register(async (scope) => {
      await scope.register(appRolesPlugin, { verifier: local, roles: ['Demo.Read.All'] });
      scope.get('/protected', async (request) => ({ roles: verifiedTokenOf(request)?.roles }));
    });
    api.get('/public', async () => ({ ok: true }));
    const token = await demoToken();
    assert.deepEqual((await api.inject({ url: '/protected', headers: { authorization: `Bearer ${token}` } })).json(), { roles: ['Demo.Read.All'] });
    assert.equal((await api.inject({ url: '/protected' })).statusCode, 401);
    assert.equal((await api.inject({ url: '/public' })).statusCode, 200);
  });

  test('R-TOKEN-7 a verifier whose JWKS cannot be fetched reports keys_unavailable', async () => {
    const unreachable = createTokenVerifier({
      keys: { jwksUri: 'https://127.0.0.1:1/keys', ca: readFileSync(id.caCertPath, 'utf8') },
      issuers: identityIssuers(id.tenantId),
      audiences: [demoApiId],
    });
    await rejects(unreachable, await demoToken(), 'keys_unavailable');
  });
});
