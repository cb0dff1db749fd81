/** The user API's one error mapping: `{ "message": … }`, and no detail of an internal failure. */
import { clientErrorStatus, type WireAnswer, WireError } from '../common/errors.ts';

export function toWireError(error: unknown): WireAnswer {
  if (error instanceof WireError) return { status: error.status, body: { message: error.message } };
  const status = clientErrorStatus(error);
  if (status !== undefined) return { status, body: { message: (error as Error).message } };
  return { status: 500, body: { message: 'internal error' } };
}
