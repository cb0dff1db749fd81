/**
 * What request-transformer and response-transformer share: Kong's
 * `name:value` list entries, and its five edits in Kong's order (remove,
 * rename, replace, add, append) on a map of names to values: rename and
 * replace act only on a name that is there, add only on one that is not,
 * append adds a value beside any there.
 */

/** Kong evaluates `$(…)` templates in values; this gateway does not, so they are refused rather than sent as text. */
export const noTemplate = (v: string) => (v.includes('$(') ? "not supported by offcloud's gateway (templates in values, $(…))" : undefined);
export const colonPair = (v: string) => (/^[^:]+:/.test(v) ? noTemplate(v) : `invalid value: '${v}' (expected 'name:value')`);

/** `name:value` as Kong splits it (at the first colon). */
export function pairsOf(values: string[]): [string, string][] {
  return values.map((v) => {
    const colon = v.indexOf(':');
    return [v.slice(0, colon), v.slice(colon + 1)];
  });
}

/** One part's edits, made once per plugin instance. */
export interface Edits<Value> {
  remove: string[];
  rename: [string, string][];
  replace: [string, Value][];
  add: [string, Value][];
  append: [string, Value][];
}

/** The edits on a map of names to one value or several (headers, query arguments, a JSON object); `append` gives a name's new value. */
export function applyEdits<Value>(target: Record<string, unknown>, edits: Edits<Value>, append: (existing: unknown, value: Value) => unknown): void {
  for (const name of edits.remove) delete target[name];
  for (const [from, to] of edits.rename) {
    if (target[from] === undefined) continue;
    target[to] = target[from];
    delete target[from];
  }
  for (const [name, value] of edits.replace) if (target[name] !== undefined) target[name] = value;
  for (const [name, value] of edits.add) if (target[name] === undefined) target[name] = value;
  for (const [name, value] of edits.append) target[name] = append(target[name], value);
}

/** The request side's append: the value alone for a new name, else a list with the values there. */
export const appendValue = (existing: unknown, value: string) =>
  existing === undefined ? value : Array.isArray(existing) ? [...(existing as unknown[]), value] : [existing, value];
