/**
 * basic-auth (Kong PRIORITY 1100): `Authorization: Basic …` (or
 * `Proxy-Authorization`) checked against basicauth_credentials, whose
 * passwords are kept as Kong hashes them (sha1 of password and consumer
 * id). Kong 3.x answers 401 `Unauthorized` with `WWW-Authenticate: Basic
 * realm="service"` for a missing or a wrong credential alike.
 */
import { timingSafeEqual } from 'node:crypto';
import { hashBasicauthPassword } from '../../config/entities.ts';
import type { Field } from '../../config/schema.ts';
import { GatewayError } from '../../errors.ts';
import { alreadyAuthenticated, failOrAnonymous, setConsumer } from '../authentication.ts';
import { definePlugin, type RequestContext } from '../types.ts';

interface BasicAuthConfig {
  anonymous: string | null;
  hide_credentials: boolean;
  realm: string;
}

const basicAuthFields: Record<string, Field> = {
  anonymous: { type: 'string', default: null },
  hide_credentials: { type: 'boolean', default: false },
  realm: { type: 'string', default: 'service' },
};

const BASIC = /^\s*[Bb]asic\s+(\S+)/;

/** The username and password of the first of Authorization / Proxy-Authorization that carries them. */
function givenCredentials(ctx: RequestContext): { username: string; password: string } | null {
  for (const name of ['authorization', 'proxy-authorization']) {
    const value = ctx.clientHeaders[name];
    const found = typeof value === 'string' ? BASIC.exec(value) : null;
    if (!found) continue;
    const decoded = Buffer.from(found[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) continue;
    return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  return null;
}

function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export const basicAuth = definePlugin<BasicAuthConfig>({ name: 'basic-auth', priority: 1100, configFields: basicAuthFields, noConsumer: true }, (conf) => {
  const refusal = () => new GatewayError(401, 'Unauthorized', { 'WWW-Authenticate': `Basic realm="${conf.realm}"` });
  return {
    access(ctx) {
      if (alreadyAuthenticated(ctx, conf.anonymous)) return;
      const given = givenCredentials(ctx);
      const credential = given && ctx.directory.findBasicauthCredential(given.username);
      const consumer = credential && ctx.directory.findConsumer(credential.consumer.id);
      if (!given || !credential || !consumer || !sameHash(hashBasicauthPassword(given.password, credential.consumer.id), credential.password)) {
        failOrAnonymous(ctx, conf.anonymous, refusal());
        return;
      }
      if (conf.hide_credentials) {
        delete ctx.upstreamHeaders.authorization;
        delete ctx.upstreamHeaders['proxy-authorization'];
      }
      setConsumer(ctx, consumer, credential, credential.username);
    },
  };
});
