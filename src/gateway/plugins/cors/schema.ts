/** cors's config (Kong's kong/plugins/cors/schema.lua), with Kong's defaults. */
import type { Field } from '../../config/schema.ts';
import { RE2 } from 're2-wasm';

export const CORS_METHODS = ['GET', 'HEAD', 'PUT', 'PATCH', 'POST', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT'] as const;

export interface CorsConfig {
  origins: string[] | null;
  headers: string[] | null;
  exposed_headers: string[] | null;
  methods: string[];
  max_age: number | null;
  credentials: boolean;
  private_network: boolean;
  preflight_continue: boolean;
  allow_origin_absent: boolean;
}

/** An origin is an exact one unless it holds a character outside `A-Za-z0-9.:/-`; then it is a regex, which must compile. */
function checkOrigin(origin: string): string | undefined {
  if (origin === '*' || /^[A-Za-z0-9.:/-]+$/.test(origin)) return undefined;
  try {
    new RE2(origin, 'u');
  } catch (err) {
    return `'${origin}' is not a valid regex: ${(err as Error).message}`;
  }
  return undefined;
}

const strings = (check?: (v: string) => string | undefined): Field => ({
  type: 'array',
  default: null,
  elements: { type: 'string', ...(check ? { check } : {}) },
});

export const corsFields: Record<string, Field> = {
  origins: strings(checkOrigin),
  headers: strings(),
  exposed_headers: strings(),
  methods: { type: 'array', default: [...CORS_METHODS], elements: { type: 'string', oneOf: CORS_METHODS } },
  max_age: { type: 'number', default: null },
  credentials: { type: 'boolean', default: false },
  private_network: { type: 'boolean', default: false },
  preflight_continue: { type: 'boolean', default: false },
  allow_origin_absent: { type: 'boolean', default: true },
};
