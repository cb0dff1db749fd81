/**
 * What a running `offcloud up` started, kept in <data-dir>/up.json (mode 0600:
 * it holds keys) so that `offcloud env`, the Testcontainers package and other
 * programs read it: every component's published facts (typed, see
 * src/common/facts.ts), its URLs and table details, and what failed and why.
 * Written once every component has started or failed; removed when the
 * servers close.
 */
import { readFile, rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Detail, Endpoint, RunningComponent } from '../common/component.ts';
import { mergeFacts, type PublishedFacts } from '../common/facts.ts';
import { writeFileAtomic } from '../common/files.ts';
import type { FailedComponent } from './table.ts';

export interface StartedRecord {
  urls: Endpoint[];
  /** What the table shows under the URLs; for people, not for programs (they read `facts`). */
  details: Detail[];
  caCertPath: string | null;
}

export interface UpState {
  pid: number;
  startedAt: string;
  /** Every started component's facts, under its name. */
  facts: PublishedFacts;
  components: Record<string, StartedRecord>;
  failed: Record<string, FailedComponent>;
}

export function upStatePath(dataDir: string): string {
  return resolve(dataDir, 'up.json');
}

export async function writeUpState(
  dataDir: string,
  started: ReadonlyMap<string, RunningComponent>,
  failed: ReadonlyMap<string, FailedComponent>,
): Promise<void> {
  const components: Record<string, StartedRecord> = {};
  for (const [name, running] of started) {
    components[name] = { urls: running.urls, details: running.details ?? [], caCertPath: running.caCertPath ?? null };
  }
  const state: UpState = {
    pid: process.pid,
    startedAt: new Date().toISOString(),
    facts: mergeFacts(started.values()),
    components,
    failed: Object.fromEntries(failed),
  };
  await writeFileAtomic(upStatePath(dataDir), JSON.stringify(state, null, 2) + '\n', 0o600);
}

/** The state of the servers running on this data dir, or null when none are (no file, or its process is gone). */
export async function readUpState(dataDir: string): Promise<UpState | null> {
  let state: UpState;
  try {
    state = JSON.parse(await readFile(upStatePath(dataDir), 'utf8')) as UpState;
  } catch {
    return null;
  }
  try {
    process.kill(state.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return null;
  }
  return state;
}

export async function removeUpState(dataDir: string): Promise<void> {
  await rm(upStatePath(dataDir), { force: true });
}
