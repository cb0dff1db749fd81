/** The plugins this gateway has, by Kong name. A name not here is refused at load. */
import { cors } from './cors/handler.ts';
import { jwt } from './jwt/handler.ts';
import { keyAuth } from './key-auth/handler.ts';
import type { PluginDefinition } from './types.ts';
import { rateLimiting } from './rate-limiting/handler.ts';

export const PLUGINS: ReadonlyMap<string, PluginDefinition> = new Map([cors, jwt, keyAuth, rateLimiting].map((p) => [p.name, p]));
