/** Device names: one rule for the REST path, the store and the CLI. */
import { InvalidDeviceNameError } from './errors.ts';

export const MAX_NAME_LENGTH = 128;

// Letters and digits of any script plus a few punctuation marks that IoT device
// ids commonly use; no '/', '\', '%', spaces or control characters.
const NAME = /^[\p{L}\p{N}._:@~+=,!$'()*-]+$/u;

export function validateDeviceName(name: string): string {
  if (name === '') throw new InvalidDeviceNameError('a name is required');
  if (name.length > MAX_NAME_LENGTH) throw new InvalidDeviceNameError(`longer than ${MAX_NAME_LENGTH} characters`);
  if (name === '.' || name === '..') throw new InvalidDeviceNameError('"." and ".." are not names');
  if (!NAME.test(name)) {
    throw new InvalidDeviceNameError(`${JSON.stringify(name.slice(0, 40))} holds a character outside letters, digits and ._:@~+=,!$'()*-`);
  }
  return name;
}

/** A URL path segment → a validated name; broken percent-encoding or UTF-8 is refused. */
export function deviceNameFromPath(segment: string): string {
  if (segment.length > MAX_NAME_LENGTH * 12) throw new InvalidDeviceNameError(`longer than ${MAX_NAME_LENGTH} characters`);
  let decoded: string;
  try {
    decoded = decodeURIComponent(segment);
  } catch {
    throw new InvalidDeviceNameError('broken percent-encoding or UTF-8');
  }
  return validateDeviceName(decoded);
}
