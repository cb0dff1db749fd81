/** `Key=Value;Key=Value` connection strings (the hub's, storage's), split into their fields. */
export function connectionStringFields(connectionString: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of connectionString.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) out.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  return out;
}
