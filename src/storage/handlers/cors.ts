/**
 * CORS, enforced from the account's service properties as the service enforces it: a
 * preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) is answered from
 * the first rule that allows its origin, method and headers, and refused with
 * `403 CorsPreflightFailure` when none does; any other request with an `Origin` that a rule
 * allows gets `Access-Control-Allow-Origin`, `Access-Control-Expose-Headers` and
 * `Vary: Origin`. No rule, no CORS headers: a browser then refuses the answer itself.
 */
import { errors } from '../errors.ts';
import type { CorsRule } from '../persistence/service-properties.ts';

const MAX_RULES = 5;
const METHODS = new Set(['DELETE', 'GET', 'HEAD', 'MERGE', 'POST', 'OPTIONS', 'PUT', 'PATCH']);

function list(value: unknown): string[] {
  return typeof value === 'string'
    ? value
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean)
    : [];
}

/** The <Cors> element of service properties as rules; throws InvalidXmlNodeValue for a bad one. */
export function parseCorsRules(elements: Record<string, unknown>): CorsRule[] {
  const cors = elements.Cors;
  const rules = (typeof cors === 'object' && cors !== null ? ((cors as { CorsRule?: unknown[] }).CorsRule ?? []) : []) as Record<string, unknown>[];
  if (rules.length > MAX_RULES) throw errors.invalidXmlNodeValue('CorsRule');
  return rules.map((rule) => {
    const allowedMethods = list(rule.AllowedMethods).map((m) => m.toUpperCase());
    const allowedOrigins = list(rule.AllowedOrigins);
    const maxAge = Number(rule.MaxAgeInSeconds ?? 0);
    if (!allowedOrigins.length) throw errors.invalidXmlNodeValue('AllowedOrigins');
    if (!allowedMethods.length || allowedMethods.some((m) => !METHODS.has(m))) throw errors.invalidXmlNodeValue('AllowedMethods');
    if (!Number.isInteger(maxAge) || maxAge < 0) throw errors.invalidXmlNodeValue('MaxAgeInSeconds');
    return { allowedOrigins, allowedMethods, allowedHeaders: list(rule.AllowedHeaders), exposedHeaders: list(rule.ExposedHeaders), maxAgeInSeconds: maxAge };
  });
}

function originAllowed(rule: CorsRule, origin: string): boolean {
  return rule.allowedOrigins.some((o) => o === '*' || o.toLowerCase() === origin.toLowerCase());
}

/** A header name matches `x-ms-meta-*` style prefixes, or the name itself, case-insensitively. */
function headerAllowed(rule: CorsRule, name: string): boolean {
  const lower = name.toLowerCase();
  return rule.allowedHeaders.some((h) => h === '*' || (h.endsWith('*') ? lower.startsWith(h.slice(0, -1).toLowerCase()) : h.toLowerCase() === lower));
}

function allowOrigin(rule: CorsRule, origin: string): Record<string, string> {
  return rule.allowedOrigins.includes('*')
    ? { 'access-control-allow-origin': '*' }
    : { 'access-control-allow-origin': origin, 'access-control-allow-credentials': 'true' };
}

/** The answer to a preflight: its headers, or CorsPreflightFailure. */
export function preflight(
  rules: CorsRule[],
  origin: string | undefined,
  method: string | undefined,
  requestHeaders: string | undefined,
): Record<string, string> {
  if (!origin || !method) throw errors.corsPreflightFailure();
  const wanted = list(requestHeaders ?? '');
  const rule = rules.find((r) => originAllowed(r, origin) && r.allowedMethods.includes(method.toUpperCase()) && wanted.every((h) => headerAllowed(r, h)));
  if (!rule) throw errors.corsPreflightFailure();
  return {
    ...allowOrigin(rule, origin),
    'access-control-allow-methods': method.toUpperCase(),
    ...(wanted.length ? { 'access-control-allow-headers': wanted.join(',') } : {}),
    'access-control-max-age': String(rule.maxAgeInSeconds),
    vary: 'Origin',
  };
}

/** CORS headers of an ordinary request from `origin`; none when no rule allows it. */
export function responseCorsHeaders(rules: CorsRule[], origin: string | undefined, method: string): Record<string, string> {
  if (!origin) return {};
  const rule = rules.find((r) => originAllowed(r, origin) && r.allowedMethods.includes(method.toUpperCase()));
  if (!rule) return {};
  return {
    ...allowOrigin(rule, origin),
    ...(rule.exposedHeaders.length ? { 'access-control-expose-headers': rule.exposedHeaders.join(',') } : {}),
    vary: 'Origin',
  };
}
