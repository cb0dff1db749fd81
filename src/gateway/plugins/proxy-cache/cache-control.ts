/**
 * The Cache-Control and Content-Type readings proxy-cache makes, as Kong's
 * handler makes them.
 */

/** Directives by lower-case name: a number when the value reads as one, else its text, `true` when bare. */
export type Directives = Map<string, number | string | true>;

const NONE: Directives = new Map();

/** Kong's parse_directive_header: comma-separated `name[=value]`, the name lower-cased. */
export function parseDirectives(header: string | undefined): Directives {
  if (!header) return NONE;
  const directives: Directives = new Map();
  for (const part of header.split(',')) {
    const match = /^\s*([^=]+)(?:=(.+))?/.exec(part);
    if (!match) continue;
    const value = match[2]?.trim();
    const number = value === undefined || value === '' ? NaN : Number(value);
    directives.set(match[1]!.toLowerCase(), Number.isFinite(number) ? number : (value ?? true));
  }
  return directives;
}

/** A directive's number, or undefined when absent or not a number. */
export function seconds(directives: Directives, name: string): number | undefined {
  const value = directives.get(name);
  return typeof value === 'number' ? value : undefined;
}

/** The answer's lifetime under `cache_control` (Kong's resource_ttl): s-maxage, max-age, else Expires; never below 0. */
export function resourceTtl(directives: Directives, expires: string | undefined, nowSeconds: number): number {
  let maxAge = seconds(directives, 's-maxage') ?? seconds(directives, 'max-age');
  if (maxAge === undefined && expires !== undefined) {
    const at = Date.parse(expires);
    if (Number.isFinite(at)) maxAge = Math.floor(at / 1000) - nowSeconds;
  }
  return Math.max(maxAge ?? 0, 0);
}

interface MediaType {
  type: string;
  subtype: string;
  params: Map<string, string>;
}

function parseMediaType(text: string): MediaType | null {
  const [essence, ...rest] = text.split(';');
  const match = /^\s*([^/\s]+)\/([^/\s]+)\s*$/.exec(essence!);
  if (!match) return null;
  const params = new Map<string, string>();
  for (const param of rest) {
    const eq = param.indexOf('=');
    if (eq < 0) continue;
    params.set(
      param.slice(0, eq).trim().toLowerCase(),
      param
        .slice(eq + 1)
        .trim()
        .replace(/^"(.*)"$/, '$1'),
    );
  }
  return { type: match[1]!.toLowerCase(), subtype: match[2]!.toLowerCase(), params };
}

/**
 * Whether an answer's Content-Type is one of `accepted`: type and subtype
 * equal or `*`, and the same parameters with the same values (so
 * `application/json` does not take `application/json; charset=utf-8`, as
 * in Kong).
 */
export function contentTypeAccepted(contentType: string, accepted: readonly MediaType[]): boolean {
  const given = parseMediaType(contentType);
  if (!given) return false;
  return accepted.some(
    (want) =>
      (want.type === '*' || want.type === given.type) &&
      (want.subtype === '*' || want.subtype === given.subtype) &&
      want.params.size === given.params.size &&
      [...want.params].every(([name, value]) => given.params.get(name) === value),
  );
}

export function mediaTypes(list: readonly string[]): MediaType[] {
  return list.map(parseMediaType).filter((t): t is MediaType => t !== null);
}
