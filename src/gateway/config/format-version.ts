/**
 * Kong 3.x reads declarative files of `_format_version` "1.1" and "2.1"
 * (Kong 1.x and 2.x) as well as "3.0", and migrates their route paths on
 * load: before 3.0 a path was a regex whenever it held a character outside
 * letters, digits and `.-_~/%`; from 3.0 on a regex path starts with `~`.
 * A legacy path that is a regex gets the `~` (with percent-escapes of
 * characters that are not reserved decoded, regex metacharacters escaped);
 * a plain one is normalized (escapes of unreserved characters decoded,
 * repeated slashes merged), since 3.0 no longer decodes route paths.
 */

export const FORMAT_VERSIONS = ['1.1', '2.1', '3.0'] as const;
export type FormatVersion = (typeof FORMAT_VERSIONS)[number];

export function isLegacyFormat(version: unknown): boolean {
  return version === '1.1' || version === '2.1';
}

const PLAIN_PATH = /^[a-zA-Z0-9.\-_~/%]*$/;
const RESERVED = new Set("!#$%&'()*+,/:;=?@[]");
const REGEX_META = new Set('.^-{}\\|');
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

function decodeEscapes(path: string, decoded: (char: string, escape: string) => string): string {
  return path.replace(/%([0-9A-Fa-f]{2})/g, (escape, hex: string) => decoded(String.fromCharCode(parseInt(hex, 16)), escape));
}

/** One route path of a 1.1/2.1 file as Kong 3.x reads it. */
export function migrateRoutePath(path: string): string {
  if (PLAIN_PATH.test(path)) {
    const decoded = decodeEscapes(path, (char, escape) => (UNRESERVED.test(char) ? char : escape.toUpperCase()));
    return decoded.replace(/\/{2,}/g, '/');
  }
  const regex = decodeEscapes(path, (char, escape) => (RESERVED.has(char) ? escape.toUpperCase() : REGEX_META.has(char) ? `\\${char}` : char));
  return `~${regex}`;
}
