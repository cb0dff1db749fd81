/**
 * The script-trigger server's one wire-error mapping. The spec shows no error
 * bodies for script endpoints (§7), so every error is JSON
 * `{"error":{"code","message"}}` with a status that says what went wrong.
 */
import { clientErrorStatus, type WireAnswer, WireError } from '../common/errors.ts';

export class ScriptError extends WireError {
  constructor(
    status: number,
    code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(status, code, message);
  }
}

export const notFound = (path: string) => new ScriptError(404, 'ScriptNotFound', `no script is served at ${path}`);

export const badPath = () => new ScriptError(400, 'InvalidPath', 'the path is not valid percent-encoded UTF-8');

export const methodNotAllowed = (method: string, allowed: readonly string[]) =>
  new ScriptError(405, 'MethodNotAllowed', `${method} is not allowed here; use ${allowed.join(' or ')}`, {
    allow: allowed.join(', '),
  });

export const badParameter = (message: string) => new ScriptError(400, 'InvalidParameter', message);

export const badSettings = (path: string, message: string) =>
  new ScriptError(500, 'InvalidScriptSettings', `the settings line of ${path} is invalid: ${message}`);

export const scriptBusy = (path: string, limit: number) =>
  new ScriptError(429, 'ScriptBusy', `${path} already runs ${limit} time(s), its limit; try again shortly`, {
    'retry-after': '1',
  });

export const serverBusy = (limit: number) =>
  new ScriptError(503, 'ServerBusy', `${limit} scripts are running, the server's limit; try again shortly`, {
    'retry-after': '1',
  });

export const shuttingDown = () => new ScriptError(503, 'ShuttingDown', 'the server is shutting down; try again shortly', { 'retry-after': '1' });

export const httpsStarting = () => new ScriptError(503, 'Starting', 'HTTPS is not up yet (waiting for its certificate)', { 'retry-after': '5' });

export const cannotStart = (path: string, reason: string) => new ScriptError(500, 'ScriptNotStarted', `${path} could not be started: ${reason}`);

export const unauthorized = (realm: string) =>
  new ScriptError(401, 'Unauthorized', 'a valid user name and password are required', {
    'www-authenticate': `Basic realm="${realm}", charset="UTF-8"`,
  });

const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };

function answer(status: number, code: string, message: string, headers: Record<string, string> = {}): WireAnswer {
  return { status, headers: { ...headers, ...JSON_TYPE }, body: JSON.stringify({ error: { code, message } }) };
}

/** Any failure while handling a request, in the interface's shape. */
export function toWireError(error: unknown): WireAnswer {
  if (error instanceof ScriptError) return answer(error.status, error.code, error.message, error.headers);
  const status = clientErrorStatus(error);
  if (status === undefined) return answer(500, 'InternalError', 'internal error');
  return answer(status, status === 413 ? 'BodyTooLarge' : 'BadRequest', (error as Error).message);
}
