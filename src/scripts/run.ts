/**
 * Running one script: spawned directly (its shebang, no `sh -c`) by the spawn
 * helper (spawner.ts), in its own process group so a timeout or a client that
 * leaves takes its children down too; stdout and stderr cut into lines as
 * they are produced; the client's pace holds the script back (stdout is
 * paused while the client's buffer is full), so a script printing gigabytes
 * does not grow the server.
 */
import { dirname } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import type { Logger } from 'pino';
import type { Script } from './catalog.ts';
import { signalGroup, type Spawner } from './spawner.ts';

/** A longer line is sent in pieces of this many characters. */
export const MAX_LINE_CHARS = 64 * 1024;
/** After SIGTERM to the group, SIGKILL follows this much later. */
const KILL_GRACE_MS = 2000;
/** stderr lines logged per run; the rest are counted, not logged. */
const LOGGED_STDERR_LINES = 50;

export type OutputStream = 'stdout' | 'stderr';
/** `lost`: the spawn helper died during the run, so its exit status is unknown (its group is killed). */
export type EndReason = 'exited' | 'timeout' | 'disconnected' | 'shutdown' | 'lost';

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  reason: EndReason;
}

/**
 * Cuts a byte stream into lines. CR, LF and CRLF each end a line, as SSE
 * framing reads them, so no line sent on holds a line break; a line longer
 * than MAX_LINE_CHARS is sent in pieces of that length.
 */
export class LineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';

  push(chunk: Buffer): string[] {
    this.pending += this.decoder.write(chunk);
    const lines: string[] = [];
    for (;;) {
      const end = this.pending.search(/[\r\n]/);
      // A CR that came last may be the first half of a CRLF: wait for what follows.
      const waitForLf = end === this.pending.length - 1 && this.pending[end] === '\r';
      if (end >= 0 && end <= MAX_LINE_CHARS && !waitForLf) {
        lines.push(this.pending.slice(0, end));
        this.pending = this.pending.slice(this.pending.startsWith('\r\n', end) ? end + 2 : end + 1);
      } else if (this.pending.length > MAX_LINE_CHARS && !(waitForLf && end === MAX_LINE_CHARS)) {
        lines.push(this.pending.slice(0, MAX_LINE_CHARS));
        this.pending = this.pending.slice(MAX_LINE_CHARS);
      } else {
        return lines;
      }
    }
  }

  /** What is left when the stream ends (a last line without a line break). */
  end(): string[] {
    const rest = this.pending + this.decoder.end();
    this.pending = '';
    const lines = rest.split(/\r\n|\r|\n/);
    if (lines.at(-1) === '') lines.pop();
    return lines;
  }
}

export interface RunOutput {
  /** Sends one line; false when the client's buffer is full. */
  writeLine(stream: OutputStream, line: string): boolean;
  /** Calls `resume` once the client has taken what was buffered. */
  onDrain(resume: () => void): void;
}

export interface RunOptions {
  script: Script;
  env: Record<string, string>;
  stdin: Buffer | null;
  timeoutMs: number;
  streamStderr: boolean;
  output: RunOutput;
  logger: Logger;
  spawner: Spawner;
}

export interface ScriptRun {
  pid: number;
  /** Settles when the script has exited and its output is closed; once stopped, when nothing of its process group is left. */
  done: Promise<RunResult>;
  /** Ends the whole process group (client gone, server closing). */
  stop(reason: EndReason): void;
}

/** Starts a script; rejects when it cannot be started at all (ENOENT, EACCES). */
export async function startRun(options: RunOptions): Promise<ScriptRun> {
  const { script, output, logger } = options;
  const child = await options.spawner.spawn({
    command: script.command,
    args: script.args,
    cwd: dirname(script.file),
    env: options.env,
    // Without a body, stdin is /dev/null: the same empty input, one pipe fewer per run.
    stdin: options.stdin?.length ? options.stdin : null,
  });
  const { pid } = child;
  let endReason: EndReason = 'exited';
  let finished = false;
  let killTimer: NodeJS.Timeout | undefined;
  let groupKilled = (): void => undefined;
  const killed = new Promise<void>((resolve) => {
    groupKilled = resolve;
  });
  const kill = () => {
    signalGroup(pid, 'SIGKILL');
    // A process that left the group (setsid) may still hold the pipes: they must not hold the run.
    child.stdout.destroy();
    child.stderr.destroy();
    groupKilled();
  };
  const stop = (reason: EndReason) => {
    if (finished || endReason !== 'exited') return;
    endReason = reason;
    signalGroup(pid, 'SIGTERM');
    // Not unref'd: a server closing waits for this, or a member ignoring SIGTERM would outlive it.
    killTimer = setTimeout(kill, KILL_GRACE_MS);
    // Output paused for a slow client must flow again, or the pipes never report their end.
    child.stdout.resume();
    child.stderr.resume();
  };
  const timeout = setTimeout(() => stop('timeout'), options.timeoutMs);

  const pipe = (stream: OutputStream) => {
    const source = child[stream];
    const splitter = new LineSplitter();
    let logged = 0;
    const deliver = (lines: string[]) => {
      let ok = true;
      for (const line of lines) {
        if (stream === 'stderr' && logged++ < LOGGED_STDERR_LINES) logger.info({ script: script.urlPath, pid, stderr: line }, 'script stderr');
        if (stream === 'stdout' || options.streamStderr) ok = output.writeLine(stream, line) && ok;
      }
      // Once stopping, what is left is at most a pipe's buffer: let it through.
      if (!ok && endReason === 'exited' && !source.isPaused()) {
        source.pause();
        output.onDrain(() => source.resume());
      }
    };
    source.on('data', (chunk: Buffer) => deliver(splitter.push(chunk)));
    return new Promise<void>((resolve) =>
      source.once('close', () => {
        deliver(splitter.end());
        resolve();
      }),
    );
  };
  const outputsClosed = Promise.all([pipe('stdout'), pipe('stderr')]);

  const done = child.exit.then(async (status) => {
    if (status === null) {
      // The helper died: the script's end cannot be known, so its group goes now.
      if (endReason === 'exited') endReason = 'lost';
      kill();
    }
    await outputsClosed;
    // A stopped run is over once its whole group is: a member that outlived the script waits for the SIGKILL.
    if (endReason !== 'exited' && signalGroup(pid, 0)) await killed;
    finished = true;
    clearTimeout(timeout);
    clearTimeout(killTimer);
    return { code: status?.code ?? null, signal: status?.signal ?? null, reason: endReason };
  });
  // A script that exits while a child of it still holds stdout open keeps the stream
  // going until the timeout ends the group; that is the script's own doing.
  return { pid, done, stop };
}

/** The global and per-script limits on runs at once. */
export class RunLimiter {
  private running = 0;
  private readonly perScript = new Map<string, number>();
  private idleWaiters: (() => void)[] = [];

  constructor(readonly globalLimit: number) {}

  /**
   * Takes a slot, or says which limit is full: 'script' (429) or 'server' (503).
   * The returned release must be called exactly once.
   */
  acquire(file: string, scriptLimit: number): (() => void) | 'script' | 'server' {
    const mine = this.perScript.get(file) ?? 0;
    if (scriptLimit > 0 && mine >= scriptLimit) return 'script';
    if (this.running >= this.globalLimit) return 'server';
    this.running++;
    this.perScript.set(file, mine + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running--;
      const left = (this.perScript.get(file) ?? 1) - 1;
      if (left > 0) this.perScript.set(file, left);
      else this.perScript.delete(file);
      if (this.running === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
    };
  }

  /** Settles once no slot is taken (at once when none is). */
  idle(): Promise<void> {
    return this.running === 0 ? Promise.resolve() : new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}
