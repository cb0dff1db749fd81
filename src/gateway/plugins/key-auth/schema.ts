/** key-auth's config (Kong's kong/plugins/key-auth/schema.lua), with Kong's defaults. */
import type { Field } from '../../config/schema.ts';

export interface KeyAuthConfig {
  key_names: string[];
  hide_credentials: boolean;
  anonymous: string | null;
  key_in_header: boolean;
  key_in_query: boolean;
  key_in_body: boolean;
  run_on_preflight: boolean;
  realm: string | null;
}

export const keyAuthFields: Record<string, Field> = {
  key_names: {
    type: 'array',
    default: ['apikey'],
    elements: {
      type: 'string',
      check: (v) => (/^[A-Za-z0-9_-]+$/.test(v) ? undefined : `bad header name '${v}', allowed characters are A-Z, a-z, 0-9, '_', and '-'`),
    },
    check: (v) => (v.length > 0 ? undefined : 'length must be at least 1'),
  },
  hide_credentials: { type: 'boolean', default: false },
  anonymous: { type: 'string', default: null },
  key_in_header: { type: 'boolean', default: true },
  key_in_query: { type: 'boolean', default: true },
  key_in_body: { type: 'boolean', default: false },
  run_on_preflight: { type: 'boolean', default: true },
  realm: { type: 'string', default: null },
};
