#!/usr/bin/env node
// `npm run build` (npm pack runs it as prepack): src/ compiled by tsc into dist/,
// with the files that are not TypeScript (devices.proto, the console's page)
// copied beside the code that reads them by import.meta.url.
import { spawnSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';

process.chdir(new URL('..', import.meta.url).pathname);
rmSync('dist', { recursive: true, force: true });
const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
cpSync('src', 'dist', { recursive: true, filter: (path) => !path.endsWith('.ts') });
