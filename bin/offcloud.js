#!/usr/bin/env node
// The package runs the JavaScript that `npm run build` (prepack) compiled into dist/.
// A checkout (src/ present) runs the TypeScript through tsx, so what runs is always
// the code being edited, never a stale build.
import { existsSync } from 'node:fs';

if (existsSync(new URL('../src/cli.ts', import.meta.url))) {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli.ts');
} else {
  await import('../dist/cli.js');
}
