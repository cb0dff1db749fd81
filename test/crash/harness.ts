/**
 * Crash consistency, one harness for every stateful component: a component runs in
 * a child process on a data dir while writers load it; at a random moment after the
 * first acknowledged write the child gets SIGKILL; it restarts on the same data dir
 * and the case checks that everything acknowledged is there exactly once, that
 * nothing half-written shows, and the harness that no temporary file is left.
 *
 * A case is one `crashRounds` call in `test/crash/<component>.test.ts`:
 *   start(dataDir)         starts the child (`startChild` runs `offcloud <component> …`)
 *   load(server, writers, dataDir)  drives writes with `writers.run(n, step)`, recording in its
 *                          own state what each step saw acknowledged; writes made by
 *                          management commands run them with `runOffcloud(args,
 *                          writers.signal)`, so the kill reaches them too
 *   check(server, round, dataDir)  reads everything back from the restarted child
 * Acknowledgements accumulate over the rounds, so later rounds check earlier ones too.
 *
 * The disk-full fault (`diskFullRound`) runs a component on a small tmpfs instead: it fills
 * up mid-traffic, then gets its space back. A step the component refused for the full disk
 * checks that the refusal is its interface's error and calls `writers.refused()`; `check`
 * then finds every acknowledged write and no refused one, after space returned and after
 * a restart. A restart on the full disk either fails with one line that names the full
 * disk, or serves what is stored.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import assert from 'node:assert/strict';
import { LineWatcher, tempDataDir, eventWithin } from '../helpers/index.ts';
import { smallDisk } from '../helpers/small-disk.ts';
import { seededRandom } from '../../src/common/random.ts';

const BIN = new URL('../../bin/offcloud.js', import.meta.url).pathname;

export interface Child {
  process: ChildProcess;
  /** The first stdout line that matched the ready pattern. */
  readyLine: string;
}

/** Runs `offcloud <args…>` and waits for a stdout line matching `ready`. */
export async function startChild(args: string[], ready: RegExp): Promise<Child> {
  const child = spawn(process.execPath, [BIN, ...args, '--log-level', 'warn'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const stdout = new LineWatcher(child.stdout!);
  const stderr = new LineWatcher(child.stderr!);
  const exited = once(child, 'exit').then(([code]) => {
    throw new Error(`offcloud ${args[0]} exited (${String(code)}) before it was ready:\n${stderr.text.slice(-2000)}`);
  });
  try {
    return { process: child, readyLine: await Promise.race([stdout.waitFor(ready, 120_000), exited]) };
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  } finally {
    exited.catch(() => undefined);
  }
}

/**
 * Runs an `offcloud` management command (a writer of its own: it edits the data dir's
 * files) to its end and returns what it printed; when `signal` aborts, it gets SIGKILL
 * wherever it is, as the server does.
 */
export async function runOffcloud(args: string[], signal?: AbortSignal): Promise<string> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], ...(signal ? { signal, killSignal: 'SIGKILL' as const } : {}) });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  const [code] = await eventWithin<[number | null]>(child, 'close', `offcloud ${args.join(' ')} to finish`, 120_000);
  if (code !== 0) throw new Error(`offcloud ${args.join(' ')} exited ${String(code)}: ${Buffer.concat(err).toString()}`);
  return Buffer.concat(out).toString();
}

/** Concurrent write loops that stop when the child is about to be killed. */
export class Writers {
  private acknowledged = 0;
  private firstAck!: () => void;
  readonly firstAcknowledged = new Promise<void>((resolve) => (this.firstAck = resolve));

  constructor(readonly signal: AbortSignal) {}

  /**
   * Runs `count` loops of `step(writer, iteration)` until the round ends. A step
   * resolves once its write is acknowledged; it records that itself. A step that
   * fails before the kill fails the test; one cut off by the kill was never acknowledged.
   */
  async run(count: number, step: (writer: number, iteration: number) => Promise<void>): Promise<void> {
    await Promise.all(
      Array.from({ length: count }, async (_, writer) => {
        for (let iteration = 0; !this.signal.aborted; iteration++) {
          try {
            await step(writer, iteration);
          } catch (err) {
            if (this.signal.aborted) return;
            throw err;
          }
          this.acknowledged++;
          this.firstAck();
        }
      }),
    );
  }

  get count(): number {
    return this.acknowledged;
  }

  private refusals = 0;

  /** A step calls this when the component refused its write for the full disk, with its interface's error. */
  refused(): void {
    this.refusals++;
  }

  get refusedCount(): number {
    return this.refusals;
  }
}

/**
 * Files an interrupted atomic write or upload (`*.tmp`) or exclusive creation
 * (createFileExclusive's `*.new`) may leave: none may survive a restart.
 */
async function temporaryFiles(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && /\.(tmp|new)$/.test(entry.name)) found.push(join(entry.parentPath, entry.name));
  }
  return found;
}

/** Leaves beside each file what a process killed inside writeFileAtomic or createFileExclusive would. */
async function plantTemporaries(paths: string[]): Promise<void> {
  for (const path of paths) {
    await mkdir(dirname(path), { recursive: true });
    for (const suffix of ['tmp', 'new']) await writeFile(`${path}.${randomBytes(6).toString('hex')}.${suffix}`, '{"half-writ');
  }
}

export interface CrashCase<Server extends Child> {
  rounds?: number;
  /** Longest random wait, after the first acknowledged write, before the kill (ms). */
  maxKillDelayMs?: number;
  start(dataDir: string): Promise<Server>;
  load(server: Server, writers: Writers, dataDir: string): Promise<void>;
  check(server: Server, round: number, dataDir: string): Promise<void>;
  /**
   * Files whose temporaries the component removes at start: the harness plants one
   * of each kind beside them before every restart, so the clean-up is checked even
   * when no kill landed inside a write.
   */
  planted?(dataDir: string): string[];
}

/**
 * The seed of the kill delays: $OFFCLOUD_CRASH_SEED when set (to repeat a failed run's
 * delays), else a fresh one. Every run prints it, and a failing round names it.
 */
export function crashSeed(): number {
  const given = process.env.OFFCLOUD_CRASH_SEED;
  if (given === undefined) return randomBytes(4).readUInt32LE();
  const seed = Number(given);
  assert.ok(Number.isSafeInteger(seed) && seed >= 0, `OFFCLOUD_CRASH_SEED must be a whole number, got ${given}`);
  return seed;
}

export async function crashRounds<Server extends Child>(
  t: { after(fn: () => unknown): void; diagnostic(text: string): void },
  spec: CrashCase<Server>,
): Promise<void> {
  const seed = crashSeed();
  const random = seededRandom(seed);
  t.diagnostic(`crash seed ${seed} (OFFCLOUD_CRASH_SEED=${seed} repeats these kill delays)`);
  const dataDir = await tempDataDir(t);
  let server = await spec.start(dataDir);
  t.after(() => server.process.kill('SIGKILL'));
  for (let round = 1; round <= (spec.rounds ?? 3); round++) {
    try {
      const stop = new AbortController();
      const writers = new Writers(stop.signal);
      const loading = spec.load(server, writers, dataDir);
      await Promise.race([writers.firstAcknowledged, loading]);
      await delay(Math.floor(random() * (spec.maxKillDelayMs ?? 1500)));
      stop.abort();
      server.process.kill('SIGKILL');
      await eventWithin(server.process, 'exit', 'the killed component to exit');
      await loading;
      assert.ok(writers.count > 0, `round ${round}: some writes were acknowledged before the kill`);
      await plantTemporaries(spec.planted?.(dataDir) ?? []);
      server = await spec.start(dataDir);
      assert.deepEqual(await temporaryFiles(dataDir), [], `round ${round}: no temporary files after a restart`);
      await spec.check(server, round, dataDir);
    } catch (err) {
      if (err instanceof Error) err.message = `crash seed ${seed}, round ${round}: ${err.message}`;
      throw err;
    }
  }
}

export interface DiskFullCase<Server extends Child> {
  /** Size of the small disk the component's data dir is on (default 32 MiB). */
  diskBytes?: number;
  start(dataDir: string): Promise<Server>;
  /** Drives writes as CrashCase.load does; a step refused for the full disk checks the error's shape and calls `writers.refused()`. */
  load(server: Server, writers: Writers, dataDir: string): Promise<void>;
  /** Every acknowledged write is there, no refused one is. */
  check(server: Server, stage: string, dataDir: string): Promise<void>;
}

/** Polls `ready` until it holds, while `running` has not failed. */
async function until(ready: () => boolean, running: Promise<void>, what: string, timeoutMs = 60_000): Promise<void> {
  const failed = running.then(() => undefined);
  for (const deadline = Date.now() + timeoutMs; !ready(); await Promise.race([delay(20), failed])) {
    if (Date.now() > deadline) throw new Error(`within ${timeoutMs} ms: ${what}`);
  }
}

async function stopChild(child: Child): Promise<void> {
  if (child.process.exitCode !== null) return;
  child.process.kill('SIGTERM');
  await eventWithin(child.process, 'exit', 'the component to exit after SIGTERM', 60_000);
}

/** The lines a start that exited before it was ready wrote to stderr (startChild's error carries them). */
function failedStart(err: unknown): { code: string; stderr: string } | undefined {
  const match = /exited \((\S+)\) before it was ready:\n([\s\S]*)$/.exec((err as Error).message);
  return match ? { code: match[1]!, stderr: match[2]! } : undefined;
}

/** One line, naming the full disk, as the CLI says it. */
export const DISK_FULL_LINE = /^offcloud: .*disk .* is full.*$/;

export async function diskFullRound<Server extends Child>(
  t: { after(fn: () => unknown): void; diagnostic(text: string): void },
  spec: DiskFullCase<Server>,
): Promise<void> {
  const began = Date.now();
  const mark = (what: string) => t.diagnostic(`${((Date.now() - began) / 1000).toFixed(1)} s: ${what}`);
  const disk = await smallDisk(t, spec.diskBytes ?? 32 * 1024 * 1024);
  const dataDir = disk.path;
  let server = await spec.start(dataDir);
  t.after(() => server.process.kill('SIGKILL'));
  const stop = new AbortController();
  const writers = new Writers(stop.signal);
  const loading = spec.load(server, writers, dataDir);
  await Promise.race([writers.firstAcknowledged, loading]);
  mark('first write acknowledged');
  await disk.fill();
  mark('disk full');
  await until(() => writers.refusedCount > 0, loading, 'a write refused while the disk is full');
  const ackedWhileFull = writers.count;
  await delay(200);
  await disk.free();
  mark('space back');
  const freedAt = writers.count;
  await until(() => writers.count > freedAt + 5, loading, 'writes acknowledged again once space returned');
  mark('writes acknowledged again');
  stop.abort();
  await loading;
  mark('writers stopped');
  t.diagnostic(`acknowledged ${writers.count} (${ackedWhileFull} before space returned), refused ${writers.refusedCount}`);
  await spec.check(server, 'after space returned', dataDir);
  mark('checked');

  await stopChild(server);
  await disk.fill();
  mark('stopped, disk full again');
  try {
    server = await spec.start(dataDir);
    await spec.check(server, 'started on a full disk', dataDir);
    await stopChild(server);
  } catch (err) {
    const failed = failedStart(err);
    if (!failed) throw err;
    assert.equal(failed.code, '1', 'a start on a full disk exits with code 1');
    assert.match(failed.stderr.trim(), DISK_FULL_LINE, `a start on a full disk says so in one line, got:\n${failed.stderr}`);
  }
  mark('start on a full disk done');
  await disk.free();
  server = await spec.start(dataDir);
  await spec.check(server, 'restarted once space returned', dataDir);
  mark('restarted and checked');
}
