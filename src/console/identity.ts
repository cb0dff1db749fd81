/**
 * The identity page: the directory (applications, roles, clients, grants,
 * managed identities) as identity's own reader sees it, with secrets reduced
 * to their hints; a token decoder that checks a JWT against the issuer's JWKS
 * and says why it does not verify; a client-credentials token for a client.
 */
import type { FastifyInstance } from 'fastify';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import type { Dispatcher } from 'undici';
import type { OptionValues } from '../common/config.ts';
import { openDirectory, type Directory } from '../identity/public.ts';
import { InvalidInputError, NotConfiguredError } from './errors.ts';
import type { consoleOptions } from './options.ts';
import { callUpstream, type Upstream } from './upstream.ts';

type ConsoleValues = OptionValues<typeof consoleOptions>;

export interface DecodedToken {
  header: Record<string, unknown>;
  claims: Record<string, unknown>;
  verified: boolean;
  /** Why it does not verify (jose's code and message), or the JWKS it verified against. */
  reason: string;
}

/** The directory without what only the issuer needs (secret salts and hashes, certificates' PEM). */
function withoutSecrets(directory: Directory): Directory {
  return {
    ...directory,
    clients: directory.clients.map((c) => ({
      ...c,
      secrets: c.secrets.map((s) => ({ ...s, salt: '', hash: '' })),
      certificates: c.certificates.map((cert) => ({ ...cert, certificate: '' })),
    })),
  };
}

export function decodeToken(token: string): { header: Record<string, unknown>; claims: Record<string, unknown> } {
  try {
    return { header: decodeProtectedHeader(token) as Record<string, unknown>, claims: decodeJwt(token) as Record<string, unknown> };
  } catch (err) {
    throw new InvalidInputError(`not a JWT: ${(err as Error).message}`);
  }
}

export function registerIdentityRoutes(app: FastifyInstance, options: ConsoleValues, dispatcher: Dispatcher): void {
  const issuer = (): Upstream => {
    if (!options.identityUrl) throw new NotConfiguredError("identity's issuer URL", 'identity-url');
    return { what: "identity's issuer", base: options.identityUrl };
  };

  app.get('/api/identity/directory', async () => {
    const store = openDirectory(options.dataDir, options.identityDirectory || undefined);
    try {
      return withoutSecrets(await store.current());
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new NotConfiguredError("identity's directory file", 'identity-directory');
      throw err;
    }
  });

  app.post<{ Body: { token?: unknown } }>('/api/identity/decode', async (request): Promise<DecodedToken> => {
    const token = request.body?.token;
    if (typeof token !== 'string' || !token.trim()) throw new InvalidInputError('paste a token (three base64url parts separated by dots)');
    const { header, claims } = decodeToken(token.trim());
    const tenant = typeof claims.tid === 'string' && /^[0-9a-f-]{36}$/i.test(claims.tid) ? claims.tid : options.identityTenant;
    const jwksPath = `${tenant}/discovery/v2.0/keys`;
    const answer = await callUpstream(dispatcher, issuer(), { method: 'GET', path: jwksPath });
    if (answer.statusCode !== 200) {
      await answer.body.dump();
      return { header, claims, verified: false, reason: `the issuer's JWKS (${jwksPath}) answered ${answer.statusCode}` };
    }
    const keys = createLocalJWKSet((await answer.body.json()) as JSONWebKeySet);
    try {
      await jwtVerify(token.trim(), keys);
      return { header, claims, verified: true, reason: `signature and lifetime verified against ${options.identityUrl}/${jwksPath}` };
    } catch (err) {
      const code = (err as { code?: string }).code ?? 'ERR_JWT_INVALID';
      return { header, claims, verified: false, reason: `${code}: ${(err as Error).message}` };
    }
  });

  app.post<{ Body: { clientId?: unknown; clientSecret?: unknown; scope?: unknown } }>('/api/identity/token', async (request, reply) => {
    const { clientId, clientSecret, scope } = request.body ?? {};
    if (typeof clientId !== 'string' || typeof clientSecret !== 'string' || typeof scope !== 'string') {
      throw new InvalidInputError('clientId, clientSecret and scope are strings');
    }
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret, scope });
    const answer = await callUpstream(dispatcher, issuer(), {
      method: 'POST',
      path: `${encodeURIComponent(options.identityTenant || 'organizations')}/oauth2/v2.0/token`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    });
    return reply
      .code(answer.statusCode)
      .type('application/json')
      .send(await answer.body.text());
  });
}
