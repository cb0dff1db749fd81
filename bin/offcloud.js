#!/usr/bin/env node
// The package runs the JavaScript that `npm run build` compiled into dist/ (a clone's
// `npm install` builds it too, through `prepare`). A checkout runs dist/ while it is current,
// newer than every file under src/, and the TypeScript through tsx once src/ has changed,
// so what runs is always the code being edited, never a stale build.
import { existsSync, readdirSync, statSync } from 'node:fs';

const SOURCES = new URL('../src/', import.meta.url);
const STAMP = new URL('../dist/.built', import.meta.url);

/** The newest modification time under a folder, the folders' own included (a removed file changes its folder's). */
function newest(folder) {
  let latest = statSync(folder).mtimeMs;
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = new URL(entry.name + (entry.isDirectory() ? '/' : ''), folder);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

if (!existsSync(SOURCES) || (existsSync(STAMP) && statSync(STAMP).mtimeMs >= newest(SOURCES))) {
  await import('../dist/cli.js');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli.ts');
}
