/**
 * The sentiment container's one error mapping, in the two shapes its API
 * generations use (reference §3.2). v2: `{code, message, innerError:{code,
 * message}}`. v3.x and the Language API: `{error:{code, message,
 * innererror:{code, message}}}`; their SDKs surface the inner code. Both with
 * a 4xx status. Per-document problems are not errors here: they are entries
 * of the answer's `errors` array (v2.ts, v3.ts).
 */
import type { BillingRefusal } from '../cognitive/index.ts';
import { clientErrorStatus, type WireAnswer, WireError } from '../common/errors.ts';

/** Which generation's error shape a request gets: v2.x, or v3.x and the Language API. */
export type ErrorDialect = 'v2' | 'v3';

export class TextAnalyticsError extends WireError {
  constructor(
    status: number,
    readonly innerCode: string,
    message: string,
  ) {
    super(status, innerCode, message);
  }
}

export function badRequest(innerCode: string, message: string): TextAnalyticsError {
  return new TextAnalyticsError(400, innerCode, message);
}

/** The outer code and message of a request-level error, which each generation words its own way. */
const OUTER = {
  v2: { code: 'BadRequest', message: 'Invalid request' },
  v3: { code: 'InvalidRequest', message: 'Invalid Request.' },
} as const;

export const MESSAGES = {
  tooLarge: (maxBytes: number) => `Request Payload sent is too large to be processed. Limit request size to: ${maxBytes} bytes.`,
  notUtf8: 'Request body is not valid UTF-8.',
  badJson: 'Request body is not valid JSON.',
  badMediaType: 'Content-Type must be application/json, application/json-patch+json or text/json.',
} as const;

function shaped(dialect: ErrorDialect, status: number, inner: { code: string; message: string } | null, outer: { code: string; message: string }): WireAnswer {
  if (dialect === 'v2') return { status, body: inner ? { ...outer, innerError: inner } : outer };
  return { status, body: { error: inner ? { ...outer, innererror: inner } : outer } };
}

/** Maps anything thrown while handling a request to the wire error of the request's generation. */
export function toWireError(error: unknown, dialect: ErrorDialect, maxBytes: number): WireAnswer {
  if (error instanceof TextAnalyticsError) return shaped(dialect, error.status, { code: error.innerCode, message: error.message }, OUTER[dialect]);
  const fastifyCode = (error as { code?: string }).code;
  if (fastifyCode === 'FST_ERR_CTP_BODY_TOO_LARGE') return toWireError(badRequest('InvalidRequestBodyFormat', MESSAGES.tooLarge(maxBytes)), dialect, maxBytes);
  if (fastifyCode === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return shaped(dialect, 415, null, { code: dialect === 'v2' ? 'UnsupportedMediaType' : 'InvalidRequest', message: MESSAGES.badMediaType });
  }
  if (clientErrorStatus(error) !== undefined) return toWireError(badRequest('InvalidRequestBodyFormat', (error as Error).message), dialect, maxBytes);
  return shaped(dialect, 500, null, { code: 'InternalServerError', message: 'Internal error.' });
}

/** No operation at this path, in the dialect of the path's generation. */
export function notFound(dialect: ErrorDialect, what: string): WireAnswer {
  return shaped(dialect, 404, null, { code: 'NotFound', message: `No operation at ${what}.` });
}

/** A billing refusal in the generation's shape (`code` is the billing status: CouldNotConnect, OutOfQuota, …). */
export function refusalBody(dialect: ErrorDialect) {
  return (refusal: BillingRefusal): object => shaped(dialect, 0, null, { code: refusal.code, message: refusal.message }).body as object;
}

/** v3.x and Language paths speak v3's shape; v2 paths and anything unknown keep the container's first (v2) one. */
export function dialectOf(url: string): ErrorDialect {
  return url.startsWith('/text/analytics/v3.') || url.startsWith('/language/') ? 'v3' : 'v2';
}
