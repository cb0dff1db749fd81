/** jwt with jwt_secrets as Kong 3.x runs it; tokens are signed by jose, an independent implementation of the signing side. */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'node:test';
import { SignJWT } from 'jose';
import { request } from 'undici';
import { echoBackend, errorsOf, gatewayWith } from './helpers.ts';

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const pem = (k: typeof rsa.publicKey) => k.export({ type: 'spki', format: 'pem' }).toString();
const now = () => Math.floor(Date.now() / 1000);

function sign(claims: Record<string, unknown>, alg: string, key: Parameters<SignJWT['sign']>[0]) {
  return new SignJWT(claims).setProtectedHeader({ alg, typ: 'JWT' }).sign(key);
}
const hs = (claims: Record<string, unknown>, secret = 'alice-secret', alg = 'HS256') => sign(claims, alg, new TextEncoder().encode(secret));

function doc(url: string, config: Record<string, unknown> = {}) {
  return {
    _format_version: '3.0',
    services: [{ name: 'svc', url, routes: [{ name: 'r', paths: ['/'], plugins: [{ name: 'jwt', config }] }] }],
    consumers: [
      {
        username: 'alice',
        custom_id: 'A1',
        jwt_secrets: [
          { key: 'alice-iss', secret: 'alice-secret' },
          { key: 'alice-384', secret: 'alice-secret', algorithm: 'HS384' },
        ],
      },
      { username: 'bob', jwt_secrets: [{ key: 'bob-rsa', algorithm: 'RS256', rsa_public_key: pem(rsa.publicKey) }] },
      { username: 'carol' },
    ],
    jwt_secrets: [{ consumer: 'carol', key: 'carol-ec', algorithm: 'ES256', rsa_public_key: pem(ec.publicKey) }],
  };
}

async function call(url: string, headers: Record<string, string> = {}) {
  const res = await request(url, { headers });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: JSON.parse(text) as Record<string, unknown> };
}

test('jwt: HS256/HS384, RS256 and ES256 tokens from the header, the query or a cookie reach the service as their consumer', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url, { cookie_names: ['token'] }));
  const tokens = [
    ['Authorization', `Bearer ${await hs({ iss: 'alice-iss' })}`, 'alice'],
    ['Authorization', `bearer ${await hs({ iss: 'alice-384' }, 'alice-secret', 'HS384')}`, 'alice'],
    ['Authorization', `Bearer ${await sign({ iss: 'bob-rsa' }, 'RS256', rsa.privateKey)}`, 'bob'],
    ['Cookie', `other=1; token=${await sign({ iss: 'carol-ec' }, 'ES256', ec.privateKey)}`, 'carol'],
  ] as const;
  for (const [header, value, who] of tokens) {
    const res = await call(`${gw.proxy}/a`, { [header]: value });
    assert.equal(res.status, 200, `${who}: ${JSON.stringify(res.body)}`);
    assert.equal(backend.seen.at(-1)!.headers['x-consumer-username'], who);
  }
  assert.equal(backend.seen[0]!.headers['x-credential-identifier'], 'alice-iss');
  assert.equal(backend.seen[0]!.headers['x-consumer-custom-id'], 'A1');
  const byQuery = await call(`${gw.proxy}/a?jwt=${await hs({ iss: 'alice-iss' })}`);
  assert.equal(byQuery.status, 200);
});

test("jwt: Kong's refusals: no token, several tokens, a bad token, unknown issuer, wrong algorithm, bad signature", async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url));
  const good = await hs({ iss: 'alice-iss' });
  const cases: [Record<string, string>, string, number, string][] = [
    [{}, '', 401, 'Unauthorized'],
    [{ authorization: `Bearer ${good}` }, `?jwt=${await hs({ iss: 'alice-iss', x: 1 })}`, 401, 'Multiple tokens provided'],
    [{ authorization: 'Bearer not-a-token' }, '', 401, 'Bad token; invalid JWT'],
    [{ authorization: `Bearer ${await hs({ sub: 'x' })}` }, '', 401, "No mandatory 'iss' in claims"],
    [{ authorization: `Bearer ${await hs({ iss: 'nobody' })}` }, '', 401, "No credentials found for given 'iss'"],
    [{ authorization: `Bearer ${await hs({ iss: 'alice-iss' }, 'alice-secret', 'HS512')}` }, '', 401, 'Invalid algorithm'],
    [{ authorization: `Bearer ${await hs({ iss: 'alice-iss' }, 'wrong-secret')}` }, '', 401, 'Invalid signature'],
    [
      { authorization: `Bearer ${await sign({ iss: 'bob-rsa' }, 'RS256', generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey)}` },
      '',
      401,
      'Invalid signature',
    ],
  ];
  for (const [headers, query, status, message] of cases) {
    const res = await call(`${gw.proxy}/${query}`, headers);
    assert.equal(res.status, status, message);
    assert.equal(res.body.message, message);
    assert.equal(res.headers['www-authenticate'], message === 'Unauthorized' ? 'Bearer' : 'Bearer error="invalid_token"');
  }
  assert.equal(backend.seen.length, 0);
});

test('jwt: exp and nbf when listed in claims_to_verify; maximum_expiration; errors as a JSON object of claims', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url, { claims_to_verify: ['exp', 'nbf'], maximum_expiration: 3600 }));
  const cases: [Record<string, unknown>, number, Record<string, string> | null][] = [
    [{ iss: 'alice-iss', exp: now() + 60, nbf: now() - 1 }, 200, null],
    [{ iss: 'alice-iss', exp: now() - 1, nbf: now() - 10 }, 401, { exp: 'token expired' }],
    [{ iss: 'alice-iss', exp: now() + 60, nbf: now() + 60 }, 401, { nbf: 'token not valid yet' }],
    [{ iss: 'alice-iss', nbf: now() - 1 }, 401, { exp: 'must be a number' }],
    [{ iss: 'alice-iss', exp: now() + 7200, nbf: now() - 1 }, 401, { exp: 'exceeds maximum allowed expiration' }],
  ];
  for (const [claims, status, errors] of cases) {
    const res = await call(`${gw.proxy}/`, { authorization: `Bearer ${await hs(claims)}` });
    assert.equal(res.status, status, JSON.stringify(claims));
    if (errors) assert.deepEqual(res.body, errors);
  }
});

test('jwt: anonymous lets a request without a valid token through as the anonymous consumer', async (t) => {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, doc(backend.url, { anonymous: 'carol' }));
  const res = await call(`${gw.proxy}/`, { authorization: 'Bearer nope' });
  assert.equal(res.status, 200);
  assert.equal(backend.seen[0]!.headers['x-consumer-username'], 'carol');
  assert.equal(backend.seen[0]!.headers['x-anonymous-consumer'], 'true');
});

test("jwt: config and jwt_secrets errors use Kong's wording and paths", () => {
  const base = { _format_version: '3.0' };
  assert.deepEqual(errorsOf({ ...base, plugins: [{ name: 'jwt', config: { maximum_expiration: 10 } }] }), [
    'plugins[0].config.claims_to_verify: expected to contain: exp',
  ]);
  assert.deepEqual(errorsOf({ ...base, plugins: [{ name: 'jwt', config: { claims_to_verify: ['iat'] } }] }), [
    'plugins[0].config.claims_to_verify[0]: expected one of: exp, nbf',
  ]);
  assert.deepEqual(
    errorsOf({
      ...base,
      consumers: [{ username: 'u', jwt_secrets: [{ key: 'a', algorithm: 'RS256' }, { key: 'b', algorithm: 'ES256', rsa_public_key: 'junk' }, { key: 'a' }] }],
    }),
    [
      'consumers[0].jwt_secrets[0].rsa_public_key: required field missing',
      "consumers[0].jwt_secrets[1].rsa_public_key: invalid key; 'rsa_public_key' must be a PEM public key",
      "consumers[0].jwt_secrets[2].key: uniqueness violation: 'a' is also used by consumers[0].jwt_secrets[0]",
    ],
  );
});
