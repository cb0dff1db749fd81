/**
 * What every authentication plugin (key-auth, jwt, basic-auth) does the
 * same way in Kong: tell the upstream who called (and clear the headers a
 * client could forge), fall back to the `anonymous` consumer, and combine
 * with other auth plugins as a logical OR when `anonymous` is set.
 */
import { GatewayError, MESSAGES } from '../errors.ts';
import type { Consumer, Credential } from '../config/model.ts';
import { setOrClearHeader, type RequestContext } from './types.ts';

/** The consumer headers Kong sets (or clears); `identifier` is X-Credential-Identifier (the credential's id, or a jwt secret's key). */
export function setConsumer(ctx: RequestContext, consumer: Consumer, credential: Credential | null, identifier: string | null): void {
  const headers = ctx.upstreamHeaders;
  setOrClearHeader(headers, 'x-consumer-id', consumer.id);
  setOrClearHeader(headers, 'x-consumer-custom-id', consumer.custom_id);
  setOrClearHeader(headers, 'x-consumer-username', consumer.username);
  setOrClearHeader(headers, 'x-credential-identifier', identifier);
  setOrClearHeader(headers, 'x-anonymous-consumer', credential === null ? 'true' : null);
  ctx.consumer = consumer;
  ctx.credential = credential;
}

/** With `anonymous`, an earlier auth plugin that succeeded is enough (Kong's logical OR). */
export function alreadyAuthenticated(ctx: RequestContext, anonymous: string | null): boolean {
  return anonymous !== null && ctx.credential !== null;
}

/** A failed authentication: the request goes on as the anonymous consumer when one is configured, else `failure` is the answer. */
export function failOrAnonymous(ctx: RequestContext, anonymous: string | null, failure: GatewayError): void {
  if (!anonymous) throw failure;
  const consumer = ctx.directory.findConsumer(anonymous);
  if (!consumer) throw new GatewayError(500, MESSAGES.unexpected);
  setConsumer(ctx, consumer, null, null);
}
