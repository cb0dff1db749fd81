/**
 * The package as a user gets it: `npm pack` of this checkout (its `prepare`
 * compiles dist/), into a folder with no shared/ anywhere above it. Minutes on
 * a loaded two-core machine, more than the runner's per-file limit leaves the
 * suite, so test/fresh/setup.ts packs before the suites run, into the run's own
 * temporary folder (`npm test` gives each run a TMPDIR of its own).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { PACKAGE_ROOT } from '../../src/common/models.ts';

export const PACK_DIR = join(tmpdir(), 'offcloud-fresh-pack');

/** `npm pack` into `dir`; resolves with the tarball's path. */
export async function packInto(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  for (let up = dir; up !== dirname(up); up = dirname(up)) assert.ok(!existsSync(join(up, 'shared')), `no shared/ beside ${up}`);
  const { stdout } = await promisify(execFile)('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: PACKAGE_ROOT, maxBuffer: 16 * 1024 * 1024 });
  return join(dir, stdout.trim().split('\n').pop()!);
}

/** The tarball the set-up made, if it did. */
export async function packedTarball(): Promise<string | undefined> {
  const names = existsSync(PACK_DIR) ? await readdir(PACK_DIR) : [];
  const tarball = names.find((name) => name.endsWith('.tgz'));
  return tarball && join(PACK_DIR, tarball);
}
