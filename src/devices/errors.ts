/**
 * The devices components' one error mapping. The data service answers junk
 * names with 400 and plain text; a failed lookup is never an error to its
 * caller (§4.4.1, §7), so only name validation reaches the wire. The DevSvc
 * answers an unknown name with an empty Device, so it needs no wire errors.
 */
import { OffcloudError, StartupError } from '../common/errors.ts';

export const TEXT = 'text/plain; charset=utf-8';

/** A device name that is too long, empty, broken or holds characters we refuse. */
export class InvalidDeviceNameError extends Error {
  readonly statusCode = 400;
  constructor(readonly reason: string) {
    super(`invalid device name: ${reason}`);
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

/** The HTTP status and text for an error thrown while serving /data. */
export function toHttpError(error: unknown): { status: number; text: string } {
  if (error instanceof InvalidDeviceNameError) return { status: 400, text: error.message };
  // fastify refuses a URL whose percent-encoding or UTF-8 is broken before any route runs.
  if ((error as { code?: string }).code === 'FST_ERR_BAD_URL') return toHttpError(new InvalidDeviceNameError('broken percent-encoding or UTF-8'));
  const status = (error as { statusCode?: number }).statusCode ?? 500;
  return { status, text: status >= 500 ? 'internal error' : (error as Error).message };
}
