/**
 * Kong's kong.response header functions on an answer's headers as
 * name/value pairs (what a plugin's header phase edits): names compare
 * without case, `set` replaces every value, `add` appends one.
 */

function sameName(a: string, lowerCaseB: string): boolean {
  return a.length === lowerCaseB.length && a.toLowerCase() === lowerCaseB;
}

export function getHeader(headers: readonly string[], name: string): string | undefined {
  const lower = name.toLowerCase();
  for (let i = 0; i < headers.length; i += 2) if (sameName(headers[i]!, lower)) return headers[i + 1];
  return undefined;
}

export function clearHeader(headers: string[], name: string): void {
  const lower = name.toLowerCase();
  for (let i = headers.length - 2; i >= 0; i -= 2) if (sameName(headers[i]!, lower)) headers.splice(i, 2);
}

export function setHeader(headers: string[], name: string, value: string): void {
  clearHeader(headers, name);
  headers.push(name, value);
}

export function addHeader(headers: string[], name: string, value: string): void {
  headers.push(name, value);
}
