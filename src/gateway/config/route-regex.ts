/**
 * Regex route paths (`~/…`), matched in time linear in the path: RE2
 * (Google's engine, in its WebAssembly build) instead of JavaScript's
 * backtracking RegExp, under which one unauthenticated request with a
 * crafted path stalled every request of the process for minutes
 * (`~/files/(a+)+$` and 34 `a`s). Kong runs PCRE with a
 * match limit; RE2 needs none. RE2 has no lookaround and no backreferences:
 * paths that use them are refused when the configuration loads.
 */
import { RE2 } from 're2-wasm';

/** A regex path compiled for matching; `matchedPrefix` is what the route matched from the start of a path, or null. */
export interface RoutePattern {
  readonly source: string;
  matchedPrefix(path: string): string | null;
}

/** The characters that end a regex's leading literal run. */
const SPECIAL = new Set(['\\', '.', '*', '+', '?', '(', ')', '[', ']', '{', '}', '|', '^', '$']);

/**
 * The text every match must start with: the pattern's leading literal
 * characters, less the last one when a quantifier makes it optional. A path
 * without it is refused here, without a call into WebAssembly (most paths a
 * regex route sees are not its own).
 */
function literalPrefix(source: string): string {
  if (source.includes('|')) return '';
  let end = 0;
  while (end < source.length && !SPECIAL.has(source[end]!)) end++;
  const next = source[end];
  return next === '?' || next === '*' || next === '{' ? source.slice(0, Math.max(0, end - 1)) : source.slice(0, end);
}

/** Compiles `~<regex>` (without the `~`), anchored at the path's start as Kong does; throws on a regex RE2 cannot run. */
export function compileRoutePattern(source: string): RoutePattern {
  const re2 = new RE2(`^${source}`, 'u');
  const prefix = literalPrefix(source);
  return {
    source,
    matchedPrefix(path) {
      if (!path.startsWith(prefix)) return null;
      const found = re2.exec(path);
      return found ? found[0]! : null;
    },
  };
}
