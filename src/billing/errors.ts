/**
 * The billing endpoint's errors and their one wire mapping: a refusal that a
 * container turns into its billing status carries `{apiStatus,
 * apiStatusMessage}`; a malformed call gets `{error:{code,message}}`.
 */
import { clientErrorStatus, type WireAnswer, WireError } from '../common/errors.ts';
import { isDiskFull } from '../common/files.ts';
import { API_STATUS_MESSAGES, type ApiStatus } from '../cognitive/protocol.ts';

/** A key or quota refusal; its code is the billing status the container acts on. */
export class BillingRefusalError extends WireError {
  constructor(
    status: number,
    readonly apiStatus: ApiStatus,
    message = API_STATUS_MESSAGES[apiStatus],
  ) {
    super(status, apiStatus, message);
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

export class InvalidReportError extends WireError {
  constructor(message: string) {
    super(400, 'InvalidRequest', message);
  }
}

/** A usage query (GET /billing/v1/usage) with a parameter billing does not take. */
export class InvalidQueryError extends WireError {
  constructor(message: string) {
    super(400, 'InvalidRequest', message);
  }
}

/** Maps any error to the billing endpoint's answer. */
export function toWireError(error: unknown): WireAnswer {
  if (error instanceof BillingRefusalError) return { status: error.status, body: { apiStatus: error.apiStatus, apiStatusMessage: error.message } };
  if (error instanceof WireError) return { status: error.status, body: { error: { code: error.code, message: error.message } } };
  const status = clientErrorStatus(error);
  if (status !== undefined) return { status, body: { error: { code: 'InvalidRequest', message: (error as Error).message } } };
  if (isDiskFull(error)) {
    return {
      status: 503,
      body: { error: { code: 'ServiceUnavailable', message: "Billing's disk is full: the report was not recorded. Send it again once space is freed." } },
    };
  }
  return { status: 500, body: { error: { code: 'InternalError', message: 'internal error' } } };
}
