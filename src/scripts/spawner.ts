/**
 * Creating script processes through the spawn helper (spawn-helper.js): a
 * small Node process, started with the first run, that forks the scripts and
 * hands their pipes back, so the server reads their output itself (live
 * lines and back-pressure as with its own children) without paying for a
 * fork of its own, much larger, process. The server still signals the
 * process groups itself (same user). A helper that dies is replaced at the
 * next run; the runs it held report no exit status.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';

const HELPER = new URL('./spawn-helper.js', import.meta.url);
/** How long a helper gets to exit once its channel is closed. */
const STOP_GRACE_MS = 2000;

export interface SpawnRequest {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  stdin: Buffer | null;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SpawnedScript {
  pid: number;
  stdout: Socket;
  stderr: Socket;
  /** The exit status, or null when the helper died before it saw the script exit. */
  exit: Promise<ExitStatus | null>;
}

/** Messages from the helper (see spawn-helper.js). */
type FromHelper =
  | { type: 'ready' }
  | { type: 'stdout'; id: number; pid: number }
  | { type: 'stderr'; id: number }
  | { type: 'exit'; id: number; code: number | null; signal: NodeJS.Signals | null }
  | { type: 'failed'; id: number; code: string };

/** One run between its request and its exit. */
interface Pending {
  resolve(spawned: SpawnedScript): void;
  reject(err: Error): void;
  exited(status: ExitStatus | null): void;
  exit: Promise<ExitStatus | null>;
  pid?: number;
  stdout?: Socket;
  started: boolean;
}

interface Helper {
  child: ChildProcess;
  ready: Promise<void>;
  pending: Map<number, Pending>;
}

/** Signals every process of the group (signal 0: only asks); false when none is left. */
export function signalGroup(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

function startError(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`cannot start the script: ${code}`), { code });
}

export class Spawner {
  private helper: Helper | null = null;
  private nextId = 1;

  constructor(private readonly logger: Logger) {}

  /** Starts a script in its own process group; rejects when it cannot be started (its errno code). */
  async spawn(request: SpawnRequest): Promise<SpawnedScript> {
    const helper = this.helper ?? this.startHelper();
    await helper.ready;
    const id = this.nextId++;
    return new Promise<SpawnedScript>((resolve, reject) => {
      let exited: (status: ExitStatus | null) => void = () => undefined;
      const exit = new Promise<ExitStatus | null>((settle) => {
        exited = settle;
      });
      helper.pending.set(id, { resolve, reject, exited, exit, started: false });
      const { stdin, ...rest } = request;
      helper.child.send({ id, ...rest, stdin: stdin?.toString('base64') ?? null }, (err: Error | null) => {
        if (!err || !helper.pending.delete(id)) return;
        reject(err);
      });
    });
  }

  /** Ends the helper (runs must have ended: their exit statuses come from it). */
  async close(): Promise<void> {
    const helper = this.helper;
    if (!helper) return;
    this.helper = null;
    const { child } = helper;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    // Closing the channel ends it; one that does not end at once is killed.
    if (child.connected) child.disconnect();
    const kill = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    await exited;
    clearTimeout(kill);
  }

  private startHelper(): Helper {
    // Without the server's own flags: tsx's loader (from the sources) would double the helper's size.
    const child = fork(HELPER, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: [] });
    const helper: Helper = { child, pending: new Map(), ready: Promise.resolve() };
    helper.ready = new Promise<void>((resolve, reject) => {
      child.on('message', (message: FromHelper, handle?: Socket) => {
        if (message.type === 'ready') resolve();
        else this.received(helper, message, handle);
      });
      child.once('exit', (code, signal) => {
        reject(new Error(`the spawn helper exited before it was ready (code ${code}, signal ${signal})`));
        this.lost(helper, code, signal);
      });
    });
    // A run waiting for it sees the failure; nobody else needs to.
    helper.ready.catch(() => undefined);
    child.on('error', (err) => this.logger.warn({ err: err.message }, 'spawn helper error'));
    this.helper = helper;
    return helper;
  }

  private received(helper: Helper, message: Exclude<FromHelper, { type: 'ready' }>, handle: Socket | undefined): void {
    const run = helper.pending.get(message.id);
    if (!run) return;
    switch (message.type) {
      case 'stdout':
        run.pid = message.pid;
        run.stdout = handle;
        return;
      case 'stderr':
        run.started = true;
        run.resolve({ pid: run.pid as number, stdout: run.stdout as Socket, stderr: handle as Socket, exit: run.exit });
        return;
      case 'failed':
        helper.pending.delete(message.id);
        run.reject(startError(message.code));
        return;
      case 'exit':
        helper.pending.delete(message.id);
        run.exited({ code: message.code, signal: message.signal });
        return;
    }
  }

  /**
   * The helper has gone: a run it had not handed over fails to start (its group, if it has one,
   * is killed: nobody else knows of it); a started one ends without a status. The next run
   * starts a new helper.
   */
  private lost(helper: Helper, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.helper === helper) {
      this.helper = null;
      this.logger.warn({ code, signal, runs: helper.pending.size }, 'spawn helper exited; a new one starts with the next run');
    }
    for (const run of helper.pending.values()) {
      if (!run.started) {
        run.stdout?.destroy();
        if (run.pid !== undefined) signalGroup(run.pid, 'SIGKILL');
        run.reject(startError('ESPAWNHELPER'));
      }
      run.exited(null);
    }
    helper.pending.clear();
  }
}
