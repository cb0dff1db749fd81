/**
 * `offcloud gateway parse <file>`: validates a declarative file the way
 * start-up does and prints every problem with its path, like Kong's
 * `kong config parse`. Exit code 0 when the file would load, 1 otherwise.
 */
import { readFile } from 'node:fs/promises';
import { DeclarativeConfigError, findingLine } from '../errors.ts';
import { parseDeclarativeText, validateDeclarative } from './declarative.ts';

export async function checkDeclarativeFile(file: string): Promise<{ ok: boolean; message: string }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    return { ok: false, message: `cannot read ${file}: ${(err as Error).message}` };
  }
  try {
    const { entities, warnings } = validateDeclarative(parseDeclarativeText(text));
    // Entities beyond services, routes, consumers, key-auth credentials and plugins are counted when the file has some.
    const always = ['services', 'routes', 'consumers', 'keyauth_credentials', 'plugins'];
    const counts = Object.entries(entities)
      .filter(([kind, list]) => (list as unknown[]).length > 0 || always.includes(kind))
      .map(([kind, list]) => `${(list as unknown[]).length} ${kind}`);
    const warned = warnings.map((w) => `${file}: warning: ${findingLine(w)}\n`).join('');
    return { ok: true, message: `${warned}parse successful: ${counts.join(', ')}` };
  } catch (err) {
    if (!(err instanceof DeclarativeConfigError)) throw err;
    return { ok: false, message: err.describe(file) };
  }
}

/** Prints the outcome of checking one file; the exit code. */
export async function parseDeclarativeFile(file: string): Promise<number> {
  const { ok, message } = await checkDeclarativeFile(file);
  (ok ? process.stdout : process.stderr).write(`${message}\n`);
  return ok ? 0 : 1;
}
