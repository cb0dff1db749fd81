// `NODE_OPTIONS=--import <this file> RECORD_MODULES_FILE=<file> node …`: appends to <file>
// every module the process loads, one URL or path a line. ES modules are seen by a resolve
// hook (it runs off the main thread, so it writes to the file itself); CommonJS files, which
// a CommonJS package requires without passing that hook, are listed from require.cache at exit.
import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';

const file = process.env.RECORD_MODULES_FILE;
const hooks = `
import { appendFileSync } from 'node:fs';
let file;
export function initialize(data) { file = data.file; }
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(file, resolved.url + '\\n');
  return resolved;
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`, { data: { file } });

const require = createRequire(import.meta.url);
process.on('exit', () => appendFileSync(file, Object.keys(require.cache).join('\n') + '\n'));
