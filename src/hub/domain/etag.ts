/** The one etag generator of devices, modules and twins: a new random value on every change. */
import { randomBytes } from 'node:crypto';

export function newEtag(): string {
  return randomBytes(9).toString('base64');
}
