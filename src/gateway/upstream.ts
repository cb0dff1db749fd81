/**
 * Talking to upstream services: one keep-alive pool per service origin
 * (undici), Kong's per-phase timeouts, `retries` extra tries when a
 * connection fails before anything was sent, and bodies streamed both ways.
 */
import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { Readable, type Writable } from 'node:stream';
import { Pool, errors as undiciErrors } from 'undici';
import { GatewayError, MESSAGES } from './errors.ts';
import type { Service } from './model.ts';

export type UpstreamHeaders = Record<string, string | string[] | undefined>;

export interface ForwardRequest {
  service: Service;
  method: string;
  /** Path and query, as the upstream gets them. */
  path: string;
  headers: Record<string, string | string[]>;
  /** A buffered body, the client's stream, or none. */
  body: Buffer | IncomingMessage | null;
  /** Largest body streamed through (bytes, 0 = no limit). */
  maxBodySize: number;
  /** Called once with the upstream's status and headers; returns where the body goes. */
  onResponse(status: number, headers: UpstreamHeaders): Writable;
  /** The client's response: when it closes early, the upstream request is dropped too. */
  client: Writable;
}

/** Errors that mean "no connection was made", so no byte reached the upstream and a retry is safe. */
const CONNECT_FAILURES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT']);
/** Errors before any response byte; safe to retry while no byte of a streamed body was sent. */
const EARLY_RESETS = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);
const TIMEOUTS = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'GW_WRITE_TIMEOUT']);
const NAME_FAILURES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL']);

function errorCode(err: unknown): string {
  const e = err as { code?: string; cause?: { code?: string } };
  return e.cause?.code ?? e.code ?? '';
}

class WriteTimeoutError extends Error {
  readonly code = 'GW_WRITE_TIMEOUT';
}

/**
 * The client's body as the upstream pulls it: counts bytes against the
 * limit, and fails when the upstream accepts nothing for write_timeout ms
 * (Kong's write timeout: the time between two successful writes).
 */
async function* streamBody(
  body: IncomingMessage,
  limits: { maxBodySize: number; writeTimeout: number; abort: (err: Error) => void },
  started: { value: boolean },
): AsyncGenerator<Buffer> {
  started.value = true;
  let total = 0;
  // Ending early must not destroy the client's socket: the gateway still answers it.
  for await (const chunk of body.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (limits.maxBodySize && total > limits.maxBodySize) throw new GatewayError(413, MESSAGES.payloadTooLarge);
    const timer = setTimeout(() => limits.abort(new WriteTimeoutError('upstream write timed out')), limits.writeTimeout);
    try {
      yield chunk;
    } finally {
      clearTimeout(timer);
    }
  }
}

export class UpstreamPools {
  private readonly pools = new Map<string, Pool>();
  /** Each loaded service object remembers its pool, so the hot path builds no key. */
  private readonly byService = new WeakMap<Service, Pool>();

  private poolFor(service: Service): Pool {
    const known = this.byService.get(service);
    if (known) return known;
    const origin = `${service.protocol}://${service.host.includes(':') ? `[${service.host}]` : service.host}:${service.port}`;
    const key = `${origin}|${service.connect_timeout}|${service.tls_verify ?? false}`;
    let pool = this.pools.get(key);
    if (!pool) {
      pool = new Pool(origin, {
        connect: { timeout: service.connect_timeout, rejectUnauthorized: service.tls_verify ?? false },
        keepAliveTimeout: 60_000,
        keepAliveMaxTimeout: 600_000,
      });
      this.pools.set(key, pool);
    }
    this.byService.set(service, pool);
    return pool;
  }

  /**
   * Sends the request, trying again up to `retries` times when the
   * connection fails before the request went out. Failures before the
   * response began become Kong's 502/503/504; later ones end the response.
   */
  async forward(request: ForwardRequest): Promise<void> {
    const { service } = request;
    const pool = this.poolFor(service);
    let lastError: unknown;
    for (let attempt = 0; attempt <= service.retries; attempt++) {
      const bodyStarted = { value: false };
      let responded = false;
      // undici takes an EventEmitter as its abort signal: far cheaper per request than an AbortController.
      const signal = new EventEmitter();
      let abortReason: Error | null = null;
      const abort = (reason: Error) => {
        if (abortReason) return;
        abortReason = reason;
        signal.emit('abort');
      };
      const onClientGone = () => {
        if (!request.client.writableFinished) abort(new Error('client went away'));
      };
      request.client.once('close', onClientGone);
      const body =
        request.body === null || Buffer.isBuffer(request.body)
          ? request.body
          : Readable.from(streamBody(request.body, { maxBodySize: request.maxBodySize, writeTimeout: service.write_timeout, abort }, bodyStarted), { objectMode: false });
      try {
        await pool.stream(
          {
            path: request.path,
            method: request.method as 'GET',
            headers: request.headers,
            body,
            headersTimeout: service.read_timeout,
            bodyTimeout: service.read_timeout,
            signal,
          },
          ({ statusCode, headers }) => {
            responded = true;
            return request.onResponse(statusCode, headers as UpstreamHeaders);
          },
        );
        return;
      } catch (err) {
        const reason: unknown = abortReason ?? err;
        if (responded || request.client.destroyed) throw reason;
        if (reason instanceof GatewayError) throw reason;
        lastError = reason;
        const code = errorCode(reason);
        // A streamed body that has begun cannot be sent again.
        const retryable = !bodyStarted.value && (CONNECT_FAILURES.has(code) || EARLY_RESETS.has(code));
        if (!retryable) break;
      } finally {
        request.client.removeListener('close', onClientGone);
      }
    }
    throw upstreamFailure(lastError);
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.close()));
    this.pools.clear();
  }
}

/** Kong's answer for an upstream that could not be used. */
function upstreamFailure(err: unknown): GatewayError {
  const code = errorCode(err);
  if (NAME_FAILURES.has(code)) return new GatewayError(503, MESSAGES.nameResolution);
  if (TIMEOUTS.has(code) || err instanceof undiciErrors.HeadersTimeoutError) return new GatewayError(504, MESSAGES.timeout);
  return new GatewayError(502, MESSAGES.badGateway);
}
