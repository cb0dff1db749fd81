/** What the devices suites share: a real etcd on loopback, DevSvc replicas as child processes, a GET helper. */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'undici';
import { debianProgram, freePort } from '../helpers/index.ts';

/**
 * Cleanups that run last-registered-first (node:test runs `t.after` hooks in
 * registration order), so servers close before their data dir is removed.
 */
export function lifo(t: { after(fn: () => unknown): void }): { after(fn: () => unknown): void } {
  const stack: Array<() => unknown> = [];
  t.after(async () => {
    while (stack.length) await stack.pop()!();
  });
  return { after: (fn) => void stack.push(fn) };
}

export { freePort };

/** Debian's etcd on two free loopback ports in `dir`; resolves once it serves clients. */
export async function startEtcd(t: { after(fn: () => unknown): void }, dir: string): Promise<string> {
  const etcd = debianProgram('etcd-server', '/usr/bin/etcd');
  const [client, peer] = [await freePort(), await freePort()];
  const clientUrl = `http://127.0.0.1:${client}`;
  const peerUrl = `http://127.0.0.1:${peer}`;
  const child = spawn(
    etcd,
    [
      '--name',
      't',
      '--data-dir',
      `${dir}/etcd`,
      '--listen-client-urls',
      clientUrl,
      '--advertise-client-urls',
      clientUrl,
      '--listen-peer-urls',
      peerUrl,
      '--initial-advertise-peer-urls',
      peerUrl,
      '--initial-cluster',
      `t=${peerUrl}`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  t.after(() => stop(child));
  let log = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      log += chunk.toString();
      if (log.includes('ready to serve client requests')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`etcd exited with ${code}: ${log.slice(-2000)}`)));
  });
  child.stderr!.resume();
  return `127.0.0.1:${client}`;
}

export interface ChildDevSvc {
  child: ChildProcess;
  address: string;
  nodeId: string;
}

/** `offcloud devsvc …` as its own process, so a test can kill -9 it; resolves once it printed its table. */
export async function spawnDevSvc(t: { after(fn: () => unknown): void }, args: string[]): Promise<ChildDevSvc> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'devsvc', '--log-level', 'warn', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => stop(child));
  let out = '';
  let err = '';
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const address = /grpc:\/\/(\S+)/.exec(out)?.[1];
      const nodeId = /node (\S+-[0-9a-f-]{36})/.exec(out)?.[1];
      if (address && nodeId) resolve({ child, address, nodeId });
    });
    child.once('exit', (code) => reject(new Error(`devsvc exited with ${code}: ${err.slice(-2000)}`)));
  });
}

/** SIGTERM (or SIGKILL), then wait for the exit. */
export async function stop(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  await exited;
}

export async function get(url: string): Promise<{ status: number; type: string; body: string; node: string }> {
  const response = await request(url);
  return {
    status: response.statusCode,
    type: String(response.headers['content-type'] ?? ''),
    body: await response.body.text(),
    node: String(response.headers['x-devsvc-node'] ?? ''),
  };
}

/** The data service's base URL from its printed REST URL. */
export function baseOf(urls: Array<{ url: string }>): string {
  return urls[0]!.url.replace('/data/{device}', '');
}

/** A service name no other suite or `offcloud up` on this machine uses. */
export function uniqueServiceName(): string {
  return `devsvc-t${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
}
