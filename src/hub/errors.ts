/**
 * The hub's errors (domain/errors.ts) in their two wire forms: the twin/method response
 * body a device SDK understands (`{errorCode, message}`, never empty: an empty
 * error body crashes the Node SDK), and the REST body the service SDK parses
 * (`Message: "ErrorCode:<Name>;<text>"`).
 */
import { randomUUID } from 'node:crypto';
import { clientErrorStatus, type WireAnswer } from '../common/errors.ts';
import { isDiskFull } from '../common/files.ts';
import { HubError } from './domain/errors.ts';

/** Anything thrown that is not a HubError is an internal failure (its text stays in the log), but for a full disk. */
export function toHubError(err: unknown): HubError {
  if (err instanceof HubError) return err;
  if (isDiskFull(err)) return new HubError('ServiceUnavailable', "The hub's disk is full: the change was not stored. Retry once space is freed.");
  return new HubError('ServerError', 'internal error');
}

/** Body of an error on `$iothub/twin/res/<status>/` (the device SDK fails with `message`). */
export function deviceErrorBody(err: HubError): string {
  return JSON.stringify({
    errorCode: err.errorCode,
    trackingId: randomUUID(),
    message: err.message,
    timestampUtc: new Date().toISOString(),
  });
}

/** The REST answer for any failure: the hub's own errors as they are, fastify's 4xx as ArgumentInvalid (413 MessageTooLarge). */
export function toWireError(error: unknown): WireAnswer {
  const status = clientErrorStatus(error);
  const hubError = status === undefined ? toHubError(error) : new HubError(status === 413 ? 'MessageTooLarge' : 'ArgumentInvalid', (error as Error).message);
  // fastify's own refusals keep their status (415, 404 of a bad route…) with the hub's body.
  const answer: WireAnswer = { status: status ?? hubError.status, body: serviceErrorBody(hubError) };
  if (hubError.status === 401) answer.headers = { 'www-authenticate': 'SharedAccessSignature' };
  return answer;
}

/** Body of a REST error, in the form azure-iothub's `parseErrorBody` splits. */
export function serviceErrorBody(err: HubError): { Message: string; ExceptionMessage: string } {
  return {
    Message: `ErrorCode:${err.code};${err.message}`,
    ExceptionMessage: `Tracking ID:${randomUUID().replace(/-/g, '')}-TimeStamp:${new Date().toISOString()}`,
  };
}

/** The AMQP error conditions the SDKs translate (azure-iot-amqp-base), by hub error code. */
const AMQP_CONDITIONS: Partial<Record<HubError['code'], string>> = {
  ArgumentInvalid: 'com.microsoft:argument-error',
  MessageTooLarge: 'amqp:link:message-size-exceeded',
  IotHubUnauthorizedAccess: 'amqp:unauthorized-access',
  DeviceMaximumQueueDepthExceeded: 'amqp:resource-limit-exceeded',
  DeviceNotFound: 'amqp:not-found',
  ModuleNotFound: 'amqp:not-found',
  DeviceNotOnline: 'amqp:not-found',
  DeviceAlreadyExists: 'com.microsoft:device-already-exists',
  PreconditionFailed: 'com.microsoft:precondition-failed',
  DeviceMessageLockLost: 'com.microsoft:message-lock-lost',
};

/** An AMQP error (a link's detach, a rejected delivery) for any failure. */
export function amqpCondition(error: unknown): { condition: string; description: string } {
  const hubError = toHubError(error);
  return { condition: AMQP_CONDITIONS[hubError.code] ?? 'amqp:internal-error', description: hubError.message };
}
