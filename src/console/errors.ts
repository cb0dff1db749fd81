/**
 * The console's own errors and their one wire mapping, `{error:{code,message}}`.
 * A component's error answer is not one of these: it is passed on as the
 * component sent it, so the page shows the component's own message.
 */
import { clientErrorStatus, type WireAnswer, WireError } from '../common/errors.ts';

export class ConsoleError extends WireError {}

export class LoginRequiredError extends ConsoleError {
  constructor(message = 'log in with the token printed when the console started') {
    super(401, 'LoginRequired', message);
  }
}

/** A request that did not come from the console's own page (another site, a rebound DNS name). */
export class ForeignRequestError extends ConsoleError {
  constructor(why: string) {
    super(403, 'ForeignRequest', why);
  }
}

export class NotConfiguredError extends ConsoleError {
  constructor(what: string, option: string) {
    super(404, 'NotConfigured', `the console was not given ${what} (--${option})`);
  }
}

export class InvalidInputError extends ConsoleError {
  constructor(message: string) {
    super(400, 'InvalidInput', message);
  }
}

export class UnreachableError extends ConsoleError {
  constructor(what: string, cause: Error) {
    super(502, 'ComponentUnreachable', `${what} did not answer: ${cause.message}`);
  }
}

/**
 * The console's errors as they are; a storage SDK error (RestError) with the
 * status and code storage answered, or as unreachable when storage did not
 * answer; a request fastify refused (bad JSON, too large) as InvalidRequest.
 */
export function toWireError(error: unknown): WireAnswer {
  const answer = (status: number, code: string, message: string) => ({ status, body: { error: { code, message } } });
  if (error instanceof ConsoleError) return answer(error.status, error.code, error.message);
  const { statusCode, code, name, message } = error as { statusCode?: number; code?: unknown; name?: string; message?: string };
  const firstLine = String(message ?? '').split('\n')[0]!;
  if (name === 'RestError') {
    if (statusCode === undefined) return toWireError(new UnreachableError('storage', new Error(firstLine)));
    if (statusCode < 500) return answer(statusCode, typeof code === 'string' ? code : 'InvalidRequest', firstLine);
  }
  const status = clientErrorStatus(error);
  if (status !== undefined) return answer(status, 'InvalidRequest', firstLine);
  return answer(500, 'InternalError', 'internal error');
}
