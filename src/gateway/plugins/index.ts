/** The plugins this gateway has, by Kong name. A name not here is refused at load. */
import { acl } from './acl/handler.ts';
import { basicAuth } from './basic-auth/handler.ts';
import { correlationId } from './correlation-id/handler.ts';
import { cors } from './cors/handler.ts';
import { fileLog } from './file-log/handler.ts';
import { hmacAuth } from './hmac-auth/handler.ts';
import { httpLog } from './http-log/handler.ts';
import { ipRestriction } from './ip-restriction/handler.ts';
import { jwt } from './jwt/handler.ts';
import { keyAuth } from './key-auth/handler.ts';
import { prometheus } from './prometheus/handler.ts';
import { proxyCache } from './proxy-cache/handler.ts';
import { requestSizeLimiting } from './request-size-limiting/handler.ts';
import { requestTermination } from './request-termination/handler.ts';
import { requestTransformer } from './request-transformer/handler.ts';
import { responseTransformer } from './response-transformer/handler.ts';
import type { PluginDefinition } from './types.ts';
import { rateLimiting } from './rate-limiting/handler.ts';

export const PLUGINS: ReadonlyMap<string, PluginDefinition> = new Map(
  [
    acl,
    basicAuth,
    correlationId,
    cors,
    fileLog,
    hmacAuth,
    httpLog,
    ipRestriction,
    jwt,
    keyAuth,
    prometheus,
    proxyCache,
    rateLimiting,
    requestSizeLimiting,
    requestTermination,
    requestTransformer,
    responseTransformer,
  ].map((p) => [p.name, p]),
);
