/**
 * The billing endpoint's errors and their one wire mapping: a refusal that a
 * container turns into its billing status carries `{apiStatus,
 * apiStatusMessage}`; a malformed call gets `{error:{code,message}}`.
 */
import { API_STATUS_MESSAGES, type ApiStatus } from '../cognitive/protocol.ts';

export class BillingRefusalError extends Error {
  constructor(
    readonly statusCode: number,
    readonly apiStatus: ApiStatus,
    message = API_STATUS_MESSAGES[apiStatus],
  ) {
    super(message);
  }
}

export class UnknownResourceError extends BillingRefusalError {
  constructor() {
    super(401, 'Invalid', 'Api Key is invalid.');
  }
}

export class KindMismatchError extends BillingRefusalError {
  constructor(resourceKind: string, containerType: string) {
    super(403, 'Mismatch', `The Api Key belongs to a ${resourceKind} resource, not to a ${containerType} container.`);
  }
}

export class QuotaExceededError extends BillingRefusalError {
  constructor(quota: number) {
    super(403, 'OutOfQuota', `Out of quota: the resource's limit of ${quota} units this month is used up.`);
  }
}

export class InvalidReportError extends Error {
  readonly statusCode = 400;
}

export interface WireError {
  statusCode: number;
  body: object;
}

/** Maps any error to the billing endpoint's answer. */
export function toWireError(error: unknown): WireError {
  if (error instanceof BillingRefusalError) {
    return { statusCode: error.statusCode, body: { apiStatus: error.apiStatus, apiStatusMessage: error.message } };
  }
  if (error instanceof InvalidReportError) return { statusCode: 400, body: { error: { code: 'InvalidRequest', message: error.message } } };
  const statusCode = (error as { statusCode?: number }).statusCode ?? 500;
  if (statusCode < 500) return { statusCode, body: { error: { code: 'InvalidRequest', message: (error as Error).message } } };
  return { statusCode: 500, body: { error: { code: 'InternalError', message: 'internal error' } } };
}
