/**
 * The calculator's one error mapping: every failure is a short text/plain
 * line (§4.6 answers plain text, so its errors do too).
 */
import { clientErrorStatus, type WireAnswer, WireError } from '../common/errors.ts';

const TEXT = { 'content-type': 'text/plain; charset=utf-8' };

export function toWireError(error: unknown): WireAnswer {
  if (error instanceof WireError) return { status: error.status, headers: TEXT, body: error.message };
  const status = clientErrorStatus(error);
  if (status !== undefined) return { status, headers: TEXT, body: (error as Error).message };
  return { status: 500, headers: TEXT, body: 'internal error' };
}
