/**
 * key-auth (Kong PRIORITY 1250): finds the API key in a header, the query
 * string or the body, maps it to a consumer, and tells the upstream who
 * called. Messages and headers are Kong 3.6+'s.
 */
import { GatewayError } from '../../errors.ts';
import { alreadyAuthenticated, failOrAnonymous, setConsumer } from '../authentication.ts';
import { definePlugin, type RequestContext } from '../types.ts';
import { keyAuthFields, type KeyAuthConfig } from './schema.ts';

const NO_KEY = 'No API key found in request';
const DUPLICATE_KEY = 'Duplicate API key found';
const BAD_KEY = 'Unauthorized';

type Found = { key: string } | { duplicate: true } | undefined;

function lookInQuery(ctx: RequestContext, name: string, hide: boolean): Found {
  const params = new URLSearchParams(ctx.query);
  const values = params.getAll(name);
  if (values.length > 1) return { duplicate: true };
  if (values.length === 0) return undefined;
  if (hide) {
    params.delete(name);
    ctx.query = params.toString();
  }
  return { key: values[0]! };
}

async function lookInBody(ctx: RequestContext, name: string, hide: boolean): Promise<Found> {
  const type = (ctx.clientHeaders['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') {
    const params = new URLSearchParams((await ctx.readBody()).toString('utf8'));
    const values = params.getAll(name);
    if (values.length > 1) return { duplicate: true };
    if (values.length === 0) return undefined;
    if (hide) {
      params.delete(name);
      ctx.replaceBody(Buffer.from(params.toString()));
    }
    return { key: values[0]! };
  }
  if (type === 'application/json') {
    let body: unknown;
    try {
      body = JSON.parse((await ctx.readBody()).toString('utf8'));
    } catch {
      return undefined;
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
    const value = (body as Record<string, unknown>)[name];
    if (Array.isArray(value)) return { duplicate: true };
    if (typeof value !== 'string') return undefined;
    if (hide) {
      delete (body as Record<string, unknown>)[name];
      ctx.replaceBody(Buffer.from(JSON.stringify(body)));
    }
    return { key: value };
  }
  return undefined;
}

/** One key name in the header, then the query string (Kong's order). */
function lookInHeaderAndQuery(ctx: RequestContext, conf: KeyAuthConfig, name: string): Found {
  if (conf.key_in_header) {
    const lower = name.toLowerCase();
    const values = ctx.headerValues(lower);
    if (values.length > 1) return { duplicate: true };
    if (values.length === 1) {
      if (conf.hide_credentials) delete ctx.upstreamHeaders[lower];
      return { key: values[0]! };
    }
  }
  return conf.key_in_query ? lookInQuery(ctx, name, conf.hide_credentials) : undefined;
}

/** Without key_in_body nothing waits, so the common case stays synchronous. */
function findKeyWithoutBody(ctx: RequestContext, conf: KeyAuthConfig): Found {
  for (const name of conf.key_names) {
    const found = lookInHeaderAndQuery(ctx, conf, name);
    if (found) return found;
  }
  return undefined;
}

async function findKeyWithBody(ctx: RequestContext, conf: KeyAuthConfig): Promise<Found> {
  for (const name of conf.key_names) {
    const found = lookInHeaderAndQuery(ctx, conf, name) ?? (await lookInBody(ctx, name, conf.hide_credentials));
    if (found) return found;
  }
  return undefined;
}

/** Kong's 401 with its challenge. */
function refusal(conf: KeyAuthConfig, message: string): GatewayError {
  return new GatewayError(401, message, { 'WWW-Authenticate': conf.realm ? `Key realm="${conf.realm}"` : 'Key realm="kong"' });
}

function authenticate(ctx: RequestContext, conf: KeyAuthConfig, found: Found): GatewayError | undefined {
  if (found && 'duplicate' in found) return refusal(conf, DUPLICATE_KEY);
  if (!found || found.key === '') return refusal(conf, NO_KEY);
  const credential = ctx.directory.findCredentialByKey(found.key);
  const consumer = credential && ctx.directory.findConsumer(credential.consumer.id);
  if (!credential || !consumer) return refusal(conf, BAD_KEY);
  setConsumer(ctx, consumer, credential, credential.id);
  return undefined;
}

export const keyAuth = definePlugin<KeyAuthConfig>({ name: 'key-auth', priority: 1250, configFields: keyAuthFields, noConsumer: true }, (conf) => {
  const finish = (ctx: RequestContext, found: Found) => {
    const failure = authenticate(ctx, conf, found);
    if (failure) failOrAnonymous(ctx, conf.anonymous, failure);
  };
  return {
    access(ctx) {
      if (!conf.run_on_preflight && ctx.method === 'OPTIONS') return;
      if (alreadyAuthenticated(ctx, conf.anonymous)) return;
      if (conf.key_in_body) return findKeyWithBody(ctx, conf).then((found) => finish(ctx, found));
      finish(ctx, findKeyWithoutBody(ctx, conf));
    },
  };
});
