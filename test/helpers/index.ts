/** Small helpers shared by the test suites. Nothing here stands in for a component. */
import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';

/** A fresh data dir under the system temp folder, removed when the test ends. */
export async function tempDataDir(t: TestContext | { after(fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'offcloud-test-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * The path of a program from a Debian package, or an error naming the
 * package. `npm test` installs the packages listed in scripts/debian-packages.txt.
 */
export function debianProgram(pkg: string, file: string): string {
  if (existsSync(file)) return file;
  throw new Error(`${file} is missing: install the Debian package "${pkg}" (npm test does this when run as root)`);
}

/** Debian's python3, which sees python3-paho-mqtt / python3-grpcio (not pyenv's). */
export const DEBIAN_PYTHON = '/usr/bin/python3';

/** Options that keep a component quiet in tests. */
export const quiet = { logLevel: 'silent', host: '127.0.0.1', port: 0 } as const;
