/**
 * The hub's one error type, in the hub's own codes; ../errors.ts turns it into
 * the device and service wire forms. Imports no server package, so the CLI can
 * load the domain for its usage checks.
 */
import { WireError } from '../../common/errors.ts';

/** Hub error codes: the numeric code carries the HTTP status in its first three digits. */
export const HubErrorCodes = {
  ArgumentInvalid: 400004,
  IotHubFormatError: 400006,
  MessageTooLarge: 413001,
  IotHubUnauthorizedAccess: 401003,
  DeviceMaximumQueueDepthExceeded: 403004,
  DeviceMaximumActiveFileUploadLimitExceeded: 403006,
  DeviceNotFound: 404001,
  ModuleNotFound: 404010,
  CertificateNotFound: 404020,
  DeviceNotOnline: 404103,
  DeviceAlreadyExists: 409001,
  ModuleAlreadyExistsOnDevice: 409301,
  PreconditionFailed: 412002,
  DeviceMessageLockLost: 412020,
  ServerError: 500001,
  ServiceUnavailable: 503001,
  GatewayTimeout: 504101,
} as const;
export type HubErrorName = keyof typeof HubErrorCodes;

export class HubError extends WireError {
  declare readonly code: HubErrorName;
  readonly errorCode: number;
  constructor(code: HubErrorName, message: string) {
    super(Math.floor(HubErrorCodes[code] / 1000), code, message);
    this.errorCode = HubErrorCodes[code];
  }
}

export const invalidArgument = (message: string) => new HubError('ArgumentInvalid', message);
