/** What the gateway suites share: real backends, a gateway from a document, a Redis server. */
import { execFile, spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { pino } from 'pino';
import { stringify } from 'yaml';
import { startCalculator } from '../../src/calculator/server.ts';
import { parseDeclarativeText } from '../../src/gateway/config/declarative.ts';
import { compileConfig } from '../../src/gateway/proxy/compile.ts';
import { DeclarativeConfigError } from '../../src/gateway/errors.ts';
import { CounterStores } from '../../src/gateway/plugins/rate-limiting/policies.ts';
import { pluginEnvironment } from '../../src/gateway/plugins/types.ts';
import { startGateway, type GatewayExtras, type GatewayOptions } from '../../src/gateway/server.ts';
import { startUsers } from '../../src/users/server.ts';
import { debianProgram, freePort, quiet, tempDataDir } from '../helpers/index.ts';

type After = Pick<TestContext, 'after'>;

export interface Gateway {
  proxy: string;
  https: string;
  admin: string;
  caCertPath: string;
  close(): Promise<void>;
}

function urlsOf(running: Awaited<ReturnType<typeof startGateway>>): Gateway {
  const by = (label: string) => running.urls.find((u) => u.label === label)!.url;
  return { proxy: by('proxy'), https: by('proxy (TLS)'), admin: by('admin API'), caCertPath: running.caCertPath!, close: running.close };
}

/** A gateway on free ports loading `doc` (an object, written as YAML) from a temp file. */
export async function gatewayWith(t: After, doc: unknown, options: Partial<GatewayOptions> & GatewayExtras = {}): Promise<Gateway> {
  const dataDir = await tempDataDir(t);
  const file = join(dataDir, 'kong.yml');
  await writeFile(file, typeof doc === 'string' ? doc : stringify(doc));
  const running = await startGateway({ ...quiet, httpsPort: 0, adminPort: 0, dataDir, declarativeConfig: file, ...options });
  t.after(() => running.close());
  return urlsOf(running);
}

/** The spec's deployment: calculator + user API + gateway on its default configuration. */
export async function specStack(t: After, options: Partial<GatewayOptions> = {}) {
  const dataDir = await tempDataDir(t);
  const calculator = await startCalculator(quiet);
  t.after(() => calculator.close());
  const users = await startUsers({ ...quiet, dataDir });
  t.after(() => users.close());
  const running = await startGateway({
    ...quiet,
    httpsPort: 0,
    adminPort: 0,
    dataDir,
    usersUrl: users.facts!.users!.usersUrl,
    calculatorUrl: calculator.facts!.calculator!.url,
    ...options,
  });
  t.after(() => running.close());
  return { ...urlsOf(running), facts: running.facts!.gateway!, usersUrl: users.facts!.users!.usersUrl };
}

export interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

/** An upstream that records what reached it and answers with a JSON echo (or what `respond` does). */
export async function echoBackend(t: After, respond?: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void) {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      if (respond) return respond(req, res, body);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ url: req.url, method: req.method, bytes: body.length }));
    });
  });
  const url = await listenOn(t, server);
  return { url, seen, server };
}

export async function listenOn(t: After, server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** An echo backend and a gateway (format 3.0) whose one service `s` sends these routes to it; `rest` adds top-level entities (consumers). */
export async function echoServiceWith(t: After, routes: unknown[], rest: Record<string, unknown> = {}) {
  const backend = await echoBackend(t);
  const gw = await gatewayWith(t, { _format_version: '3.0', services: [{ name: 's', url: backend.url, routes }], ...rest });
  return { backend, gw };
}

/** A loopback port nothing listens on (bound, read, released). */
export { freePort };

/** Debian's redis-server on a free loopback port, in a temp dir, stopped after the test. */
export async function startRedis(t: After): Promise<{ port: number; stop(): Promise<void> }> {
  const program = debianProgram('redis-server', '/usr/bin/redis-server');
  const dir = await tempDataDir(t);
  const port = await freePort();
  const child = spawn(program, ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--protected-mode', 'yes'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
  t.after(stop);
  await new Promise<void>((resolve, reject) => {
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${output}`)));
  });
  return { port, stop };
}

/**
 * A self-signed certificate and its key (PEM) for `names`, made by Debian's
 * openssl as a user makes one: `rsa` (2048 bits) or `ec` (P-256).
 */
export async function selfSignedCertificate(t: After, names: string[], type: 'rsa' | 'ec' = 'ec'): Promise<{ cert: string; key: string }> {
  const dir = await tempDataDir(t);
  const [certPath, keyPath] = [join(dir, 'cert.pem'), join(dir, 'key.pem')];
  const key = type === 'rsa' ? ['-newkey', 'rsa:2048'] : ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'];
  const args = ['req', '-x509', ...key, '-nodes', '-days', '30', '-subj', `/CN=${names[0]}`];
  args.push('-addext', `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}`, '-keyout', keyPath, '-out', certPath);
  await new Promise<void>((resolve, reject) => execFile(debianProgram('openssl', '/usr/bin/openssl'), args, (err) => (err ? reject(err) : resolve())));
  return { cert: await readFile(certPath, 'utf8'), key: await readFile(keyPath, 'utf8') };
}

/** Waits until the current UTC second has at least `ms` left, so a burst stays inside one window. */
export async function awayFromWindowEdge(windowMs: number, ms: number): Promise<void> {
  const left = windowMs - (Date.now() % windowMs);
  if (left < ms) await new Promise((resolve) => setTimeout(resolve, left + 5));
}

const silent = pino({ level: 'silent' });

/** Loads a declarative document (YAML/JSON text or an object) the way the gateway does. */
export function loadDoc(doc: unknown) {
  return compileConfig(typeof doc === 'string' ? parseDeclarativeText(doc) : doc, pluginEnvironment(silent, new CounterStores(silent)));
}

/** The errors a document is refused with, as `path: message` lines; fails the test when it loads. */
export function errorsOf(doc: unknown): string[] {
  try {
    loadDoc(doc);
  } catch (err) {
    assert.ok(err instanceof DeclarativeConfigError, String(err));
    return err.errors.map((e) => `${e.path}: ${e.message}`);
  }
  assert.fail('the document was accepted');
}

/** A request signed as Kong's hmac-auth documents: `name: value` lines (and the request line) joined by "\n", HMAC'd, base64. */
export function hmacHeaders(opts: { user: string; secret: string; algorithm?: string; method?: string; target: string; date?: Date; signed?: string[] }) {
  const date = (opts.date ?? new Date()).toUTCString();
  const algorithm = opts.algorithm ?? 'hmac-sha256';
  const signed = opts.signed ?? ['date', 'request-line'];
  const lines = signed.map((h) => (h === 'request-line' ? `${opts.method ?? 'GET'} ${opts.target} HTTP/1.1` : `${h}: ${date}`));
  const signature = createHmac(algorithm.slice(5), opts.secret).update(lines.join('\n')).digest('base64');
  return { date, authorization: `hmac username="${opts.user}", algorithm="${algorithm}", headers="${signed.join(' ')}", signature="${signature}"` };
}
