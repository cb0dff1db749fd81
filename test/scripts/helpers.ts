/** Helpers of the script-trigger suites: a scripts folder, a running server, SSE reading. */
import { readFileSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { TestContext } from 'node:test';
import { request } from 'undici';
import { startScripts, type RunningScripts, type ScriptsOptions } from '../../src/scripts/server.ts';
import { quiet, tempDataDir } from '../helpers/index.ts';

export interface Harness {
  server: RunningScripts;
  base: string;
  folder: string;
  dataDir: string;
  /** Writes (or replaces) a script, executable unless told otherwise. */
  script(relativePath: string, text: string, mode?: number): Promise<string>;
}

type Hooks = Pick<TestContext, 'after'> | { after(fn: () => unknown): void };

export async function writeScript(folder: string, relativePath: string, text: string, mode = 0o755): Promise<string> {
  const path = join(folder, relativePath);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, text);
  await chmod(path, mode);
  return path;
}

/** A server on port 0 over an empty scripts folder in a fresh data dir. */
export async function startHarness(t: Hooks, options: Partial<ScriptsOptions> = {}): Promise<Harness> {
  const dataDir = await tempDataDir(t);
  const folder = join(dataDir, 'served');
  await mkdir(folder);
  const server = await startScripts({ ...quiet, dataDir, scriptsDir: folder, ...options });
  t.after(() => server.close());
  const base = server.urls[0]!.url.replace(/\/$/, '');
  return { server, base, folder, dataDir, script: (path, text, mode) => writeScript(folder, path, text, mode) };
}

export interface SseEvent {
  event: string;
  data: string;
  id?: string;
  /** ms since the request was sent when the event's last byte arrived. */
  at: number;
}

/** Parses an SSE body as it arrives (per the EventSource rules used here: event, data, id). */
export function parseSse(text: string, at: number): SseEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim())
    .map((block) => {
      const event: SseEvent = { event: 'message', data: '', at };
      for (const line of block.split('\n')) {
        const colon = line.indexOf(': ');
        const [field, value] = colon < 0 ? [line, ''] : [line.slice(0, colon), line.slice(colon + 2)];
        if (field === 'event') event.event = value;
        else if (field === 'data') event.data = value;
        else if (field === 'id') event.id = value;
      }
      return event;
    });
}

export interface Streamed {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  events: SseEvent[];
  /** Each chunk as received, with its arrival time. */
  chunks: { at: number; text: string }[];
}

/** Calls a script URL and reads the whole streamed answer, timing each chunk. */
export async function callStream(
  url: string,
  init: { method?: 'GET' | 'POST' | 'PUT' | 'DELETE'; headers?: Record<string, string>; body?: string } = {},
): Promise<Streamed> {
  const started = Date.now();
  const response = await request(url, { method: init.method ?? 'GET', headers: init.headers, body: init.body });
  const chunks: { at: number; text: string }[] = [];
  let body = '';
  let pending = '';
  const events: SseEvent[] = [];
  for await (const chunk of response.body) {
    const text = (chunk as Buffer).toString('utf8');
    const at = Date.now() - started;
    chunks.push({ at, text });
    body += text;
    pending += text;
    const end = pending.lastIndexOf('\n\n');
    if (end >= 0) {
      events.push(...parseSse(pending.slice(0, end + 2), at));
      pending = pending.slice(end + 2);
    }
  }
  return { status: response.statusCode, headers: response.headers, body, events, chunks };
}

/** The `data:` lines of the message events (stdout lines). */
export function dataLines(streamed: Streamed): string[] {
  return streamed.events.filter((e) => e.event === 'message').map((e) => e.data);
}

export function exitOf(streamed: Streamed): { code: number | null; signal: string | null; reason: string } {
  const exit = streamed.events.find((e) => e.event === 'exit');
  if (!exit) throw new Error(`no exit event in ${JSON.stringify(streamed.body.slice(-300))}`);
  return JSON.parse(exit.data) as { code: number | null; signal: string | null; reason: string };
}

/** True while a process exists and is not a zombie. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // A reparented child nobody has reaped yet is gone for our purposes.
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Waits (bounded) until `check` holds, polling because process exit of a stranger has no event. */
export async function eventually(check: () => boolean, what: string, limitMs = 5000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
