/**
 * The scoring container's and front-end's one error mapping. The spec leaves
 * error statuses and bodies open (§7: "not shown"); ours is one JSON envelope
 * for every failure: `{"error": {"code", "message", "path"?}}`.
 */
import { clientErrorStatus, ConfigError, type WireAnswer, WireError } from '../common/errors.ts';

export class ScoringError extends WireError {
  constructor(
    status: number,
    code: string,
    message: string,
    /** Where in the request body the problem is (`data[0][2][17]`), when it is in the body. */
    readonly path?: string,
  ) {
    super(status, code, message);
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

/** Fastify's own errors (body too large, bad content length) carry a statusCode; keep it. */
function fromOtherError(error: unknown, bodyLimit: number): ScoringError {
  const status = clientErrorStatus(error);
  if (status === 413) return bodyTooLarge(bodyLimit);
  if (status !== undefined) return new ScoringError(status, 'BadRequest', (error as Error).message);
  // The front-end's keys file was damaged while running: refuse (fail closed); the log says why.
  if (error instanceof ConfigError) return notReady('the front-end cannot read its keys; see its log');
  return new ScoringError(500, 'InternalError', 'internal error');
}

const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };

/**
 * The one place a failure becomes a response, for both servers. Routes of the
 * open inference protocol (KServe/Triton v2) answer in that protocol's own
 * error shape, `{"error": "<message>"}`.
 */
export function toWireError(error: unknown, bodyLimit: number, style: 'envelope' | 'open-inference' = 'envelope'): WireAnswer {
  const mapped = error instanceof ScoringError ? error : fromOtherError(error, bodyLimit);
  const body = style === 'open-inference' ? { error: mapped.message } : errorBody(mapped.code, mapped.message, mapped.path);
  const headers = mapped.status === 401 ? { ...JSON_TYPE, 'www-authenticate': 'Bearer' } : JSON_TYPE;
  return { status: mapped.status, headers, body };
}
