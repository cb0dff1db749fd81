/**
 * The `x-ms-version` policy: every storage SDK release, past and future, must work.
 * A well-formed version from the oldest the Blob service still serves up to any later
 * date is accepted on every authentication path (a bearer token needs 2017-11-09, the
 * first version with OAuth). A date newer than the newest version offcloud knows is
 * served as that newest version (and logged once per server), so an SDK released after
 * this code still works; only a malformed version, or one older than the oldest, is
 * refused, with the service's `400 InvalidHeaderValue`.
 */
import { errors } from '../errors.ts';

/** The oldest version the Blob service still serves with Shared Key (the 2009-09-19 string-to-sign). */
export const OLDEST_VERSION = '2009-09-19';
/** The first version that accepts OAuth bearer tokens. */
export const OLDEST_BEARER_VERSION = '2017-11-09';
/** The newest service version offcloud knows (what @azure/storage-blob 12.34.0 sends). */
export const NEWEST_VERSION = '2026-10-06';

/** Whether `value` is a real calendar date written YYYY-MM-DD, the only shape a service version has. */
export function isWellFormedVersion(value: string): boolean {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return false;
  const date = new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])));
  return date.toISOString().slice(0, 10) === value;
}

export interface ServiceVersion {
  /** What the client asked for (absent: the request named none). */
  requested: string | undefined;
  /** The version the request is served as, and the response's `x-ms-version`. */
  effective: string;
  /** Whether the client named a version newer than NEWEST_VERSION. */
  newerThanKnown: boolean;
}

/** The version a request is served as; throws the service's error for a malformed or retired one. */
export function resolveServiceVersion(requested: string | undefined): ServiceVersion {
  if (requested === undefined || requested === '') return { requested: undefined, effective: NEWEST_VERSION, newerThanKnown: false };
  if (!isWellFormedVersion(requested) || requested < OLDEST_VERSION) throw errors.invalidHeader('x-ms-version', requested);
  const newerThanKnown = requested > NEWEST_VERSION;
  return { requested, effective: newerThanKnown ? NEWEST_VERSION : requested, newerThanKnown };
}

/** A bearer token needs an explicit version of 2017-11-09 or later, as the service requires. */
export function checkBearerVersion(version: ServiceVersion): void {
  if (version.requested === undefined) throw errors.missingHeader('x-ms-version');
  if (version.requested < OLDEST_BEARER_VERSION) throw errors.invalidHeader('x-ms-version', version.requested);
}
