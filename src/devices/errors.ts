/**
 * The devices components' one error mapping. The data service answers junk
 * names with 400 and plain text; a failed lookup is never an error to its
 * caller (§4.4.1, §7), so only name validation reaches the wire. The DevSvc
 * answers an unknown name with an empty Device, so it needs no wire errors.
 */
import { clientErrorStatus, OffcloudError, StartupError, type WireAnswer, WireError } from '../common/errors.ts';

export const TEXT = 'text/plain; charset=utf-8';

/** A device name that is too long, empty, broken or holds characters we refuse. */
export class InvalidDeviceNameError extends WireError {
  constructor(readonly reason: string) {
    super(400, 'InvalidDeviceName', `invalid device name: ${reason}`);
  }
}

/** The store file holds something that is not a device list; the CLI prints it as one line. */
export class DeviceStoreError extends OffcloudError {
  constructor(message: string) {
    super('DeviceStoreError', message);
  }
}

/** A registry that cannot be reached at start-up, with the way out. */
export function registryUnreachable(kind: string, address: string, cause: string): StartupError {
  return new StartupError(
    `cannot reach the ${kind} registry at ${address} (${cause}); start it, point --registry-address at it, or use --registry mdns (or static) for a single machine`,
  );
}

const TEXT_TYPE = { 'content-type': TEXT };

/** The data service's answer to an error thrown while serving /data: plain text. */
export function toWireError(error: unknown): WireAnswer {
  if (error instanceof WireError) return { status: error.status, headers: TEXT_TYPE, body: error.message };
  // fastify refuses a URL whose percent-encoding or UTF-8 is broken before any route runs.
  if ((error as { code?: string }).code === 'FST_ERR_BAD_URL') return toWireError(new InvalidDeviceNameError('broken percent-encoding or UTF-8'));
  const status = clientErrorStatus(error);
  if (status !== undefined) return { status, headers: TEXT_TYPE, body: (error as Error).message };
  return { status: 500, headers: TEXT_TYPE, body: 'internal error' };
}
