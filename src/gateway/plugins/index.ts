/** The plugins this gateway has, by Kong name. A name not here is refused at load. */
import { keyAuth } from './key-auth/handler.ts';
import type { PluginDefinition } from './types.ts';
import { rateLimiting } from './rate-limiting/handler.ts';

export const PLUGINS: ReadonlyMap<string, PluginDefinition> = new Map([keyAuth, rateLimiting].map((p) => [p.name, p]));
