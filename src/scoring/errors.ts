/**
 * The scoring container's and front-end's one error mapping. The spec leaves
 * error statuses and bodies open (§7: "not shown"); ours is one JSON envelope
 * for every failure: `{"error": {"code", "message", "path"?}}`.
 */
import type { FastifyReply } from 'fastify';
import type { Logger } from 'pino';

export class ScoringError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Where in the request body the problem is (`data[0][2][17]`), when it is in the body. */
    readonly path?: string,
  ) {
    super(message);
    this.name = 'ScoringError';
  }
}

/** The body is not JSON, or not the JSON a request needs (wrong shape, a non-number). */
export function invalidBody(message: string, path?: string): ScoringError {
  return new ScoringError(400, 'InvalidRequestBody', message, path);
}

export function unauthorized(message: string): ScoringError {
  return new ScoringError(401, 'Unauthorized', message);
}

export function notFound(message: string): ScoringError {
  return new ScoringError(404, 'NotFound', message);
}

export function notReady(message: string): ScoringError {
  return new ScoringError(503, 'ServiceUnavailable', message);
}

export function badGateway(message: string): ScoringError {
  return new ScoringError(502, 'BadGateway', message);
}

export interface ErrorBody {
  error: { code: string; message: string; path?: string };
}

export function errorBody(code: string, message: string, path?: string): ErrorBody {
  return { error: { code, message, ...(path === undefined ? {} : { path }) } };
}

/** A body over --max-body-bytes: one message on every route, whichever reader refused it. */
export function bodyTooLarge(limit: number): ScoringError {
  return new ScoringError(413, 'PayloadTooLarge', `the body is larger than ${limit} bytes (--max-body-bytes)`);
}

/** What the error mapping needs from its server: where to log, and the body limit a 413 names. */
export interface ErrorContext {
  logger: Logger;
  bodyLimit: number;
}

/** Fastify's own errors (body too large, bad content length) carry a statusCode; keep it. */
function fromFrameworkError(error: unknown, bodyLimit: number): ScoringError {
  const status = (error as { statusCode?: number }).statusCode ?? 500;
  if (status === 413) return bodyTooLarge(bodyLimit);
  if (status >= 400 && status < 500) return new ScoringError(status, 'BadRequest', (error as Error).message);
  return new ScoringError(500, 'InternalError', 'internal error');
}

/**
 * The one place a failure becomes a response, for both servers. Routes of the
 * open inference protocol (KServe/Triton v2) answer in that protocol's own
 * error shape, `{"error": "<message>"}`.
 */
export function sendError(reply: FastifyReply, error: unknown, context: ErrorContext, style: 'envelope' | 'open-inference' = 'envelope'): FastifyReply {
  const mapped = error instanceof ScoringError ? error : fromFrameworkError(error, context.bodyLimit);
  if (mapped.status >= 500 && !(error instanceof ScoringError)) context.logger.error({ err: error }, 'request failed');
  const body = style === 'open-inference' ? { error: mapped.message } : errorBody(mapped.code, mapped.message, mapped.path);
  return reply.code(mapped.status).type('application/json; charset=utf-8').send(body);
}
