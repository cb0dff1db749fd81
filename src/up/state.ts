/**
 * What a running `offcloud up` started, kept in <data-dir>/up.json (mode 0600:
 * it holds keys) so that `offcloud env`, the Testcontainers package and other
 * programs read it: every component's published facts (typed, see
 * src/common/facts.ts), its URLs and table details, and what failed and why.
 * Written once every component has started or failed; removed when the
 * servers close.
 *
 * A component started alone (`offcloud hub`, as each compose service runs) keeps
 * the same record for itself in <data-dir>/run/, one file per process, named by
 * host and pid: the containers of a compose project share one data volume, and
 * each container has a host name of its own. `offcloud env` reads up.json, or
 * else the records of the components running alone on its own host.
 */
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
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

function stateOf(started: ReadonlyMap<string, RunningComponent>, failed: ReadonlyMap<string, FailedComponent>): UpState {
  const components: Record<string, StartedRecord> = {};
  for (const [name, running] of started) {
    components[name] = { urls: running.urls, details: running.details ?? [], caCertPath: running.caCertPath ?? null };
  }
  return {
    pid: process.pid,
    startedAt: new Date().toISOString(),
    facts: mergeFacts(started.values()),
    components,
    failed: Object.fromEntries(failed),
  };
}

export async function writeUpState(
  dataDir: string,
  started: ReadonlyMap<string, RunningComponent>,
  failed: ReadonlyMap<string, FailedComponent>,
): Promise<void> {
  await writeFileAtomic(upStatePath(dataDir), JSON.stringify(stateOf(started, failed), null, 2) + '\n', 0o600);
}

/** A state file's record while its process runs; null when there is none or its process is gone. */
async function readLive<T extends UpState>(path: string): Promise<T | null> {
  let state: T;
  try {
    state = JSON.parse(await readFile(path, 'utf8')) as T;
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

/** The state of the servers running on this data dir, or null when none are (no file, or its process is gone). */
export function readUpState(dataDir: string): Promise<UpState | null> {
  return readLive(upStatePath(dataDir));
}

/** The record of a component started alone: its state, and the host its pid belongs to. */
interface AloneState extends UpState {
  host: string;
}

function runDir(dataDir: string): string {
  return resolve(dataDir, 'run');
}

/** Writes the record of a component started alone; resolves with the call that removes it (when the component closes). */
export async function writeComponentState(dataDir: string, name: string, running: RunningComponent): Promise<() => Promise<void>> {
  const host = hostname();
  const path = join(runDir(dataDir), `${name}.${host}.${process.pid}.json`);
  const state: AloneState = { ...stateOf(new Map([[name, running]]), new Map()), host };
  await mkdir(runDir(dataDir), { recursive: true, mode: 0o700 });
  await writeFileAtomic(path, JSON.stringify(state, null, 2) + '\n', 0o600);
  return () => rm(path, { force: true });
}

/**
 * What runs on this data dir, for `offcloud env`: the running `offcloud up`'s state, or else the
 * components started alone on this host (their records merged, in start order); null when neither.
 * A record of another host (another container on a shared volume) or of a gone process is passed over.
 */
export async function readRunningState(dataDir: string): Promise<{ state: UpState; what: string } | null> {
  const up = await readUpState(dataDir);
  if (up) return { state: up, what: `offcloud up, pid ${up.pid}, started ${up.startedAt}` };
  const names = await readdir(runDir(dataDir)).catch(() => [] as string[]);
  const host = hostname();
  const alone = (await Promise.all(names.map((name) => readLive<AloneState>(join(runDir(dataDir), name)))))
    .filter((state): state is AloneState => state?.host === host)
    .sort((a, b) => a.startedAt.localeCompare(b.startedAt));
  if (!alone.length) return null;
  const state: UpState = {
    pid: alone[0]!.pid,
    startedAt: alone[0]!.startedAt,
    facts: Object.assign({}, ...alone.map((s) => s.facts)) as PublishedFacts,
    components: Object.assign({}, ...alone.map((s) => s.components)) as UpState['components'],
    failed: {},
  };
  const what = alone.map((s) => `offcloud ${Object.keys(s.components).join(', ')}, pid ${s.pid}, started ${s.startedAt}`).join('; ');
  return { state, what };
}

export async function removeUpState(dataDir: string): Promise<void> {
  await rm(upStatePath(dataDir), { force: true });
}
