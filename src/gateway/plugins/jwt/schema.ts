/** jwt's config (Kong's kong/plugins/jwt/schema.lua), with Kong's defaults. */
import type { Field, FieldError } from '../../config/schema.ts';
import { join } from '../../config/schema.ts';

export interface JwtConfig {
  uri_param_names: string[];
  cookie_names: string[];
  key_claim_name: string;
  secret_is_base64: boolean;
  claims_to_verify: ('exp' | 'nbf')[] | null;
  anonymous: string | null;
  run_on_preflight: boolean;
  maximum_expiration: number;
  header_names: string[];
  realm: string | null;
}

const names = (fallback: string[]): Field => ({ type: 'array', default: fallback, elements: { type: 'string' } });

export const jwtFields: Record<string, Field> = {
  uri_param_names: names(['jwt']),
  cookie_names: names([]),
  key_claim_name: { type: 'string', default: 'iss' },
  secret_is_base64: { type: 'boolean', default: false },
  claims_to_verify: { type: 'array', default: null, elements: { type: 'string', oneOf: ['exp', 'nbf'] } },
  anonymous: { type: 'string', default: null },
  run_on_preflight: { type: 'boolean', default: true },
  maximum_expiration: { type: 'number', default: 0, between: [0, 31536000] },
  header_names: names(['authorization']),
  realm: { type: 'string', default: null },
};

/** A maximum expiration is checked against `exp`, which must then be verified (Kong's entity check). */
export function checkJwtConfig(config: Record<string, unknown>, path: string, errors: FieldError[]): void {
  const conf = config as unknown as JwtConfig;
  if (conf.maximum_expiration > 0 && !conf.claims_to_verify?.includes('exp')) {
    errors.push({ path: join(path, 'claims_to_verify'), message: 'expected to contain: exp' });
  }
}
