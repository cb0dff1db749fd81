/**
 * The sentiment container's one error mapping (Text Analytics v2, reference
 * §3.2): request-level problems are `{code, message, innerError:{code,
 * message}}` with a 4xx status; the v2 client turns them into a RestError
 * carrying `code`. Per-document problems are not errors here: they are
 * entries of the response's `errors` array (see analyze.ts).
 */
import type { BillingRefusal } from '../cognitive/index.ts';
import { clientErrorStatus, type WireAnswer, WireError } from '../common/errors.ts';

export class TextAnalyticsError extends WireError {
  constructor(
    status: number,
    code: string,
    readonly innerCode: string,
    message: string,
    readonly outerMessage = 'Invalid request',
  ) {
    super(status, code, message);
  }
}

export function badRequest(innerCode: string, message: string): TextAnalyticsError {
  return new TextAnalyticsError(400, 'BadRequest', innerCode, message);
}

export interface ErrorBody {
  code: string;
  message: string;
  innerError?: { code: string; message: string };
}

export const MESSAGES = {
  tooLarge: (maxBytes: number) => `Request Payload sent is too large to be processed. Limit request size to: ${maxBytes} bytes.`,
  notUtf8: 'Request body is not valid UTF-8.',
  badJson: 'Request body is not valid JSON.',
  badMediaType: 'Content-Type must be application/json, application/json-patch+json or text/json.',
} as const;

/** Maps anything thrown while handling a request to the v2 wire error. */
export function toWireError(error: unknown, maxBytes: number): WireAnswer & { body: ErrorBody } {
  if (error instanceof TextAnalyticsError) {
    return { status: error.status, body: { code: error.code, message: error.outerMessage, innerError: { code: error.innerCode, message: error.message } } };
  }
  const fastifyCode = (error as { code?: string }).code;
  if (fastifyCode === 'FST_ERR_CTP_BODY_TOO_LARGE') return toWireError(badRequest('InvalidRequestBodyFormat', MESSAGES.tooLarge(maxBytes)), maxBytes);
  if (fastifyCode === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return { status: 415, body: { code: 'UnsupportedMediaType', message: MESSAGES.badMediaType } };
  }
  if (clientErrorStatus(error) !== undefined) return toWireError(badRequest('InvalidRequestBodyFormat', (error as Error).message), maxBytes);
  return { status: 500, body: { code: 'InternalServerError', message: 'Internal error.' } };
}

/** A billing refusal in the same shape (`code` is the billing status: CouldNotConnect, OutOfQuota, …). */
export function refusalBody(refusal: BillingRefusal): ErrorBody {
  return { code: refusal.code, message: refusal.message };
}
