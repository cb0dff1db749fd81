/**
 * Calls to the components' public HTTP interfaces. A page's call under
 * /api/<component>/<path> is sent on to the component's URL + <path> with
 * the credential that component takes (a SAS token, a key, basic auth), and
 * the answer comes back as the component sent it: status, body (streamed, so
 * Server-Sent Events pass through live) and the headers a client reads.
 */
import { readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Agent, request as undiciRequest, type Dispatcher } from 'undici';
import { InvalidInputError, UnreachableError } from './errors.ts';

/** Headers of the page's call that the component needs to see. */
const REQUEST_HEADERS = ['accept', 'content-type', 'if-match', 'last-event-id'];
/** Headers of the component's answer that the page reads. */
const RESPONSE_HEADERS = ['content-type', 'etag', 'allow', 'retry-after', 'cache-control', 'last-modified', 'x-script-exit'];

export interface Upstream {
  /** What it is called in messages: "the hub". */
  what: string;
  /** Base URL; a forwarded path is appended to it and must stay under it. */
  base: string;
  /** Headers to add (authorization), made per call so tokens stay fresh. */
  headers?: () => Record<string, string>;
  /** Methods the console lets through to it (a read-only page sends GET only). */
  methods?: readonly string[];
}

/** One connection pool for every component, trusting the components' CA. */
export function createDispatcher(caFile: string): Dispatcher {
  const ca = caFile ? readFileSync(caFile, 'utf8') : undefined;
  return new Agent({ connect: ca ? { ca } : {}, headersTimeout: 0, bodyTimeout: 0 });
}

/** `base` + `path` + `search`, refusing a path that climbs out of `base` (`..`, encoded or not). */
export function resolveUnder(base: string, path: string, search = ''): URL {
  const root = new URL(base);
  // An empty path is the base itself (a score URL is the whole endpoint).
  if (!path) return new URL(search, root);
  const prefix = root.pathname.endsWith('/') ? root.pathname : `${root.pathname}/`;
  const url = new URL(`${prefix}${path.replace(/^\/+/, '')}${search}`, root);
  if (url.origin !== root.origin || !url.pathname.startsWith(prefix) || /%2e|%2f|%5c|\\/i.test(path)) {
    throw new InvalidInputError(`path ${JSON.stringify(path.slice(0, 200))} leaves the component's URL`);
  }
  return url;
}

export interface UpstreamAnswer {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: Readable & { json(): Promise<unknown>; text(): Promise<string>; dump(): Promise<void> };
}

export async function callUpstream(
  dispatcher: Dispatcher,
  upstream: Upstream,
  call: { method: string; path: string; search?: string; headers?: Record<string, string>; body?: Buffer | string; signal?: AbortSignal },
): Promise<UpstreamAnswer> {
  const url = resolveUnder(upstream.base, call.path, call.search);
  try {
    return await undiciRequest(url, {
      dispatcher,
      method: call.method as Dispatcher.HttpMethod,
      headers: { ...call.headers, ...upstream.headers?.() },
      body: call.body ?? null,
      ...(call.signal ? { signal: call.signal } : {}),
    });
  } catch (err) {
    throw new UnreachableError(upstream.what, err as Error);
  }
}

/** Sends the page's call on and streams the component's answer back. */
export async function forward(dispatcher: Dispatcher, upstream: Upstream, request: FastifyRequest, reply: FastifyReply, path: string) {
  if (upstream.methods && !upstream.methods.includes(request.method)) {
    throw new InvalidInputError(`the console sends only ${upstream.methods.join(', ')} to ${upstream.what}`);
  }
  const headers: Record<string, string> = {};
  for (const name of REQUEST_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  // The page leaving (a closed EventSource) ends the component's stream too.
  const abort = new AbortController();
  reply.raw.on('close', () => abort.abort());
  const search = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
  const body = request.body as Buffer | undefined;
  const answer = await callUpstream(dispatcher, upstream, {
    method: request.method,
    path,
    search,
    headers,
    signal: abort.signal,
    ...(body?.length ? { body } : {}),
  });
  reply.code(answer.statusCode);
  for (const name of RESPONSE_HEADERS) {
    const value = answer.headers[name];
    if (value !== undefined) reply.header(name, value);
  }
  if (String(answer.headers['content-type'] ?? '').startsWith('text/event-stream')) reply.header('x-accel-buffering', 'no');
  return reply.send(answer.body);
}
