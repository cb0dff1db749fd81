/** Small helpers shared by the test suites. Nothing here stands in for a component. */
import { mkdtemp } from 'node:fs/promises';
import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { once, type EventEmitter } from 'node:events';

const dataDirs = new Set<string>();
let removeOnExit = false;

/**
 * A fresh data dir under the system temp folder, removed when the test file's
 * process exits: `t.after` hooks run in the order they were added, so removing
 * it there would pull the folder from under servers the test closes later.
 */
export async function tempDataDir(_t: { after(fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'offcloud-test-'));
  dataDirs.add(dir);
  if (!removeOnExit) {
    removeOnExit = true;
    process.once('exit', () => {
      for (const path of dataDirs) rmSync(path, { recursive: true, force: true });
    });
  }
  return dir;
}

/**
 * The path of a program from a Debian package, or an error naming the
 * package. `npm run setup` installs the packages listed in scripts/debian-packages.txt.
 */
export function debianProgram(pkg: string, file: string): string {
  if (existsSync(file)) return file;
  throw new Error(`${file} is missing: install the Debian package "${pkg}" (npm run setup does this when run as root)`);
}

/** Debian's python3, which sees python3-paho-mqtt / python3-grpcio (not pyenv's). */
export const DEBIAN_PYTHON = '/usr/bin/python3';

/** Options that keep a component quiet in tests. */
export const quiet = { logLevel: 'silent', host: '127.0.0.1', port: 0 } as const;

/** Collects a stream's lines and lets a test wait for one matching a pattern (seen before or later). */
export class LineWatcher {
  private readonly lines: string[] = [];
  private readonly waiters: { match: RegExp; resolve: (line: string) => void }[] = [];

  constructor(stream: NodeJS.ReadableStream) {
    let partial = '';
    stream.setEncoding?.('utf8');
    stream.on('data', (chunk: string | Buffer) => {
      const parts = (partial + chunk.toString()).split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) this.push(line);
    });
    stream.on('end', () => {
      if (partial) this.push(partial);
    });
  }

  private push(line: string): void {
    this.lines.push(line);
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const waiter = this.waiters[i]!;
      if (waiter.match.test(line)) {
        this.waiters.splice(i, 1);
        waiter.resolve(line);
      }
    }
  }

  get text(): string {
    return this.lines.join('\n');
  }

  waitFor(match: RegExp, timeoutMs = 60_000): Promise<string> {
    const seen = this.lines.find((line) => match.test(line));
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no line matching ${match} within ${timeoutMs} ms; got:\n${this.text.slice(-2000)}`)), timeoutMs);
      const done = (line: string) => {
        clearTimeout(timer);
        resolve(line);
      };
      this.waiters.push({ match, resolve: done });
    });
  }
}

const OFFCLOUD_BIN = new URL('../../bin/offcloud.js', import.meta.url).pathname;

/**
 * Runs `offcloud <args>` once per list, all processes at once (commands that
 * edit one file concurrently); rejects if any exits with an error. The outputs in order.
 */
export async function offcloudAtOnce(argLists: string[][]): Promise<string[]> {
  const run = promisify(execFile);
  const done = await Promise.all(argLists.map((args) => run(process.execPath, [OFFCLOUD_BIN, ...args])));
  return done.map((d) => d.stdout);
}

/** A TCP port free on 127.0.0.1 right now, for servers that must be told their port (redis, etcd, mosquitto). */
export async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * One sample of a Prometheus metric read from `<base>/metrics`: the value of
 * the line whose name and labels match (labels not given may be anything),
 * or undefined when no such line exists.
 */
export async function readMetric(base: string, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const response = await fetch(`${base}/metrics`);
  if (response.status !== 200) throw new Error(`GET ${base}/metrics answered ${response.status}`);
  if (!response.headers.get('content-type')?.startsWith('text/plain')) throw new Error('/metrics is not in the text format');
  return metricIn(await response.text(), name, labels);
}

/** The same, from metrics text already fetched (over TLS, with a CA of the test's own). */
export function metricIn(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) return Number(match[3]);
  }
  return undefined;
}

/**
 * `once(emitter, event)` with a bound: the event's arguments, or an error naming what was
 * awaited when it has not come within `ms` (the timer does not keep the process alive).
 */
export async function eventWithin<T extends unknown[] = unknown[]>(emitter: EventEmitter, event: string, what: string, ms = 30_000): Promise<T> {
  try {
    return (await once(emitter, event, { signal: AbortSignal.timeout(ms) })) as T;
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw new Error(`${what}: no '${event}' within ${ms} ms`);
    throw err;
  }
}
