/**
 * The page's files: our own under assets/, and the front-end library from the
 * installed packages (preact, preact/hooks, htm as ES modules, no build step).
 * All are read once at start and served from memory; nothing comes from a CDN.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Asset {
  type: string;
  body: Buffer;
  etag: string;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** The library modules by the name the page's import map gives them. */
const LIBRARIES: Record<string, string> = {
  'preact.mjs': 'preact',
  'preact-hooks.mjs': 'preact/hooks',
  'htm.mjs': 'htm',
};

function asset(path: string): Asset {
  const body = readFileSync(path);
  return { type: TYPES[extname(path)] ?? 'application/octet-stream', body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` };
}

export function loadAssets(): Map<string, Asset> {
  const folder = fileURLToPath(new URL('./assets/', import.meta.url));
  const out = new Map<string, Asset>();
  const walk = (dir: string, prefix: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(dir, entry.name), `${prefix}${entry.name}/`);
      else out.set(`${prefix}${entry.name}`, asset(join(dir, entry.name)));
    }
  };
  walk(folder, '');
  for (const [name, specifier] of Object.entries(LIBRARIES)) out.set(`lib/${name}`, asset(fileURLToPath(import.meta.resolve(specifier))));
  return out;
}
