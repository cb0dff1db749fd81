/**
 * The resilience harness: one `offcloud up` with every component on a free
 * port, the listeners read from the up.json it writes, clients that vanish mid-request for each protocol, and the
 * process facts (descendants, process groups) the shutdown checks need.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { components } from '../../src/components.ts';
import { kebab } from '../../src/common/config.ts';
import { readUpState } from '../../src/up/state.ts';
import { LineWatcher, eventWithin } from '../helpers/index.ts';

const BIN = new URL('../../bin/offcloud.js', import.meta.url).pathname;

export interface Listener {
  component: string;
  label: string;
  url: URL;
}

export interface Up {
  process: ChildProcess;
  stderr: LineWatcher;
  listeners: Listener[];
  /** The first listener of a component whose label matches. */
  listener(component: string, label?: RegExp): Listener;
}

/** `--<component>-<port option> 0` for every port option of every component. */
function everyPortFree(): string[] {
  const flags: string[] = [];
  for (const component of components) {
    for (const [key, spec] of Object.entries(component.options)) {
      if (spec.type === 'integer' && /^(port|.*Port)$/.test(key)) flags.push(`--${component.name}-${kebab(key)}`, '0');
    }
  }
  return flags;
}

/** Every URL the components published in up.json (templates such as `{device}` filled in). */
async function readListeners(dataDir: string): Promise<Listener[]> {
  const state = await readUpState(dataDir);
  if (!state) throw new Error(`offcloud up wrote no ${dataDir}/up.json`);
  return Object.entries(state.components).flatMap(([component, { urls }]) =>
    urls
      .filter(({ url }) => /^(?:https?|mqtts?|grpc):\/\//.test(url))
      .map(({ label, url }) => ({ component, label, url: new URL(url.replace(/\{[^}]*\}/g, 'x')) })),
  );
}

/** Starts `offcloud up` on `dataDir` and waits for its table. */
export async function startUp(dataDir: string): Promise<Up> {
  const child = spawn(process.execPath, [BIN, 'up', '--data-dir', dataDir, '--log-level', 'info', ...everyPortFree()], { stdio: ['ignore', 'pipe', 'pipe'] });
  const stdout = new LineWatcher(child.stdout);
  const stderr = new LineWatcher(child.stderr);
  // up.json is written before the table, whose last line this is.
  await stdout.waitFor(/^Every value above as shell variables/, 240_000).catch((err: Error) => {
    child.kill('SIGKILL');
    throw new Error(`${err.message}\nstderr:\n${stderr.text.slice(-3000)}`);
  });
  const listeners = await readListeners(dataDir);
  return {
    process: child,
    stderr,
    listeners,
    listener(component, label) {
      const found = listeners.find((l) => l.component === component && (!label || label.test(l.label)));
      if (!found) throw new Error(`no ${component} listener ${label ?? ''} in up.json`);
      return found;
    },
  };
}

/** Sends SIGTERM; resolves with the exit code and signal, or 'late' when the process is still there after `limitMs`. */
export async function terminate(child: ChildProcess, limitMs: number): Promise<[number | null, string | null] | 'late'> {
  const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), limitMs)));
  try {
    return await Promise.race([exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

interface ProcessFacts {
  pid: number;
  ppid: number;
  pgid: number;
  zombie: boolean;
}

function facts(pid: string): ProcessFacts | null {
  try {
    // "pid (comm) state ppid pgrp …": comm may hold spaces, so read after its last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { pid: Number(pid), ppid: Number(fields[1]), pgid: Number(fields[2]), zombie: fields[0] === 'Z' };
  } catch {
    return null;
  }
}

function allProcesses(): ProcessFacts[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(facts)
    .filter((p): p is ProcessFacts => p !== null);
}

/** The process group of a live process. */
export function groupOf(pid: number): number {
  const found = facts(String(pid));
  if (!found) throw new Error(`process ${pid} is gone`);
  return found.pgid;
}

/** Every live process below `pid` (children, their children, …). */
export function descendants(pid: number): ProcessFacts[] {
  const all = allProcesses().filter((p) => !p.zombie);
  const found: ProcessFacts[] = [];
  let parents = new Set([pid]);
  while (parents.size) {
    const next = all.filter((p) => parents.has(p.ppid));
    found.push(...next);
    parents = new Set(next.map((p) => p.pid));
  }
  return found;
}

/** Live (not zombie) processes of any of these groups. */
export function liveMembers(pgids: Set<number>): ProcessFacts[] {
  return allProcesses().filter((p) => pgids.has(p.pgid) && !p.zombie);
}

export interface Vanishing {
  /** Resolves once the client has done its part (sent, then left or fell silent). */
  done: Promise<void>;
  socket: Socket;
}

/** The first bytes of a TLS ClientHello (record header and handshake type), and no more. */
export const PARTIAL_CLIENT_HELLO = Buffer.from([0x16, 0x03, 0x01, 0x00, 0xc8, 0x01, 0x00, 0x00]);

/** A TCP connection to a listener's port, once connected; it sends nothing unless told to. */
export async function rawConnection(url: URL): Promise<Socket> {
  const socket = connectTcp(Number(url.port), '127.0.0.1');
  socket.on('error', () => undefined);
  await eventWithin(socket, 'connect', 'a TCP connection to the listener');
  return socket;
}

/** Resolves when the connection has closed; this side closes it only after the server has closed its own. */
export function closedByServer(socket: Socket): Promise<void> {
  return socket.closed ? Promise.resolve() : new Promise((resolve) => socket.once('close', () => resolve()));
}

/** A TCP (or TLS, trusting nothing: these clients never get far enough to care) connection to a listener. */
function open(url: URL, tls: boolean): Socket {
  const port = Number(url.port);
  const socket = tls ? connectTls({ host: '127.0.0.1', port, rejectUnauthorized: false }) : connectTcp(port, '127.0.0.1');
  socket.on('error', () => undefined);
  return socket;
}

/**
 * A client that sends `bytes` once connected, then after `leaveAfterMs`
 * either drops the connection (`'drop'`) or stays without a word (`'silent'`),
 * the way a client that lost its network looks to the server.
 */
export function vanishingClient(url: URL, bytes: string | Buffer, leaveAfterMs: number, how: 'drop' | 'silent'): Vanishing {
  const tls = url.protocol === 'https:' || url.protocol === 'mqtts:';
  const socket = open(url, tls);
  const done = new Promise<void>((resolve) => {
    socket.once(tls ? 'secureConnect' : 'connect', () => {
      if (bytes.length) socket.write(bytes);
      setTimeout(() => {
        if (how === 'drop') socket.destroy();
        resolve();
      }, leaveAfterMs);
    });
    socket.once('close', () => resolve());
  });
  return { done, socket };
}

/** The HTTP shapes of leaving mid-request: right after the request, mid-body, mid-headers, idle keep-alive. */
export function vanishingHttp(url: URL, path = url.pathname): Vanishing[] {
  const host = `Host: ${url.host}\r\n`;
  return [
    vanishingClient(url, `GET ${path} HTTP/1.1\r\n${host}\r\n`, 0, 'drop'),
    vanishingClient(url, `GET ${path} HTTP/1.1\r\n${host}\r\n`, 20, 'drop'),
    vanishingClient(url, `POST ${path} HTTP/1.1\r\n${host}Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"a":`, 10, 'drop'),
    vanishingClient(url, `POST ${path} HTTP/1.1\r\n${host}Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"a":`, 0, 'silent'),
    vanishingClient(url, `GET ${path} HTTP/1.1\r\n${host}X-Half: `, 0, 'silent'),
    vanishingClient(url, `GET /health HTTP/1.1\r\n${host}\r\n`, 50, 'silent'),
    vanishingClient(url, '', 0, 'silent'),
  ];
}

/**
 * Sends a request whose body is `size` bytes, writing it only as fast as the
 * server takes it and stopping once the answer has come: a server refuses an
 * oversized body early and closes, which a client still writing sees as EPIPE
 * (or as a reset that loses the answer).
 */
export async function oversizedRequest(url: URL, contentType: string, size: number): Promise<{ status: number; body: string }> {
  const socket = open(url, url.protocol === 'https:');
  const head = `POST ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: ${contentType}\r\nContent-Length: ${size}\r\n\r\n`;
  let answer = '';
  const answered = new Promise<void>((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('latin1');
      const end = answer.indexOf('\r\n\r\n');
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(answer)?.[1] ?? NaN);
      if (end >= 0 && answer.length >= end + 4 + length) resolve();
    });
    socket.once('close', () => resolve());
  });
  let stop = false;
  void answered.then(() => (stop = true));
  socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', async () => {
    socket.write(head);
    // A server that goes by Content-Length answers before any byte of the body; body bytes still on
    // the way when it closes would make it reset the connection, and the client lose the answer.
    await Promise.race([answered, new Promise((resolve) => setTimeout(resolve, 1000))]);
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    for (let sent = 0; sent < size && !stop && !socket.destroyed; sent += chunk.length) {
      if (!socket.write(sent + chunk.length > size ? chunk.subarray(0, size - sent) : chunk))
        await new Promise((resolve) => socket.once('drain', resolve).once('close', resolve));
    }
  });
  await answered;
  socket.destroy();
  const [statusLine = '', ...rest] = answer.split('\r\n');
  return { status: Number(statusLine.split(' ')[1]), body: rest.join('\r\n').slice(rest.join('\r\n').indexOf('\r\n\r\n') + 4) };
}
