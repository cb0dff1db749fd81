/** Starts the identity component for a test and sets up registrations through the same functions the CLI uses. */
import { Agent, request } from 'undici';
import { readFileSync } from 'node:fs';
import { tempDataDir } from '../helpers/index.ts';
import { startIdentity, type IdentityOptions } from '../../src/identity/start.ts';
import { openDirectory, type Directory } from '../../src/identity/directory/index.ts';
import type { RunningComponent } from '../../src/common/component.ts';

export interface StartedIdentity {
  running: RunningComponent;
  dataDir: string;
  issuerUrl: string;
  imdsUrl: string;
  tenantId: string;
  caCertPath: string;
  /** An undici dispatcher that trusts the local CA. */
  dispatcher: Agent;
  directory(): Promise<Directory>;
  change<T>(fn: (d: Directory) => T): Promise<T>;
}

/** Anything with an `after` hook: a TestContext, or `{ after }` from node:test for a whole file. */
export interface Cleanup {
  after(fn: () => unknown): void;
}

/**
 * For a suite that shares one server: collects cleanups and runs them in the
 * suite's `after` (an `after` called inside `before` would run at once).
 */
export function suiteCleanup(after: (fn: () => Promise<void>) => void): Cleanup {
  const cleanups: (() => unknown)[] = [];
  after(async () => {
    for (const fn of cleanups.reverse()) await fn();
  });
  return { after: (fn) => cleanups.push(fn) };
}

export async function startForTest(t: Cleanup, options: Partial<IdentityOptions> = {}): Promise<StartedIdentity> {
  const dataDir = options.dataDir ?? (await tempDataDir(t));
  const running = await startIdentity({ dataDir, port: 0, imdsPort: 0, logLevel: 'silent', ...options });
  const dispatcher = new Agent({ connect: { ca: readFileSync(running.caCertPath!, 'utf8') } });
  t.after(async () => {
    await running.close();
    await dispatcher.close();
  });
  const store = openDirectory(dataDir, options.directory || undefined);
  const published = running.facts!.identity!;
  return {
    running,
    dataDir,
    issuerUrl: published.authorityHost,
    imdsUrl: published.imdsUrl,
    tenantId: published.tenantId,
    caCertPath: running.caCertPath!,
    dispatcher,
    directory: () => store.current(),
    change: (fn) => store.update(fn),
  };
}

export interface JsonAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
}

/** A form POST as the spec's curl example sends it. */
export async function postForm(
  id: StartedIdentity,
  path: string,
  fields: Record<string, string> | string,
  headers: Record<string, string> = {},
): Promise<JsonAnswer> {
  const body = typeof fields === 'string' ? fields : new URLSearchParams(fields).toString();
  const answer = await request(`${id.issuerUrl}${path}`, {
    method: 'POST',
    dispatcher: id.dispatcher,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body,
  });
  return { status: answer.statusCode, headers: answer.headers, body: (await answer.body.json()) as Record<string, unknown> };
}

export async function getJson(url: string, options: { headers?: Record<string, string>; dispatcher?: Agent } = {}): Promise<JsonAnswer> {
  const answer = await request(url, { headers: options.headers ?? {}, ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}) });
  return { status: answer.statusCode, headers: answer.headers, body: (await answer.body.json()) as Record<string, unknown> };
}

/** The claims of a JWT, without checking it (the verifier tests check signatures). */
export function claimsOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
}

export function headerOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString('utf8')) as Record<string, unknown>;
}
