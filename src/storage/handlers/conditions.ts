/**
 * Conditional headers, checked as the service does on every operation that takes them:
 * `If-Match`, `If-None-Match`, `If-Modified-Since`, `If-Unmodified-Since` and the blob
 * tag condition `x-ms-if-tags`. A write whose condition fails is `412 ConditionNotMet`;
 * a read answers `304 Not Modified` where HTTP says so (If-None-Match, If-Modified-Since)
 * and 412 otherwise. Writes check them again as they commit (the store runs the check
 * inside the change), so of racing conditional writes only those whose condition still holds land.
 */
import { errors } from '../errors.ts';
import { header, type Operation } from './context.ts';
import { matchesTagCondition, parseTagCondition, type TagCondition } from './tag-conditions.ts';

/** What conditions are checked against: a blob or a container as it is now. */
export interface Conditional {
  etag: string;
  modified: number;
  tags?: Record<string, string>;
}

export interface Conditions {
  ifMatch?: string;
  ifNoneMatch?: string;
  ifModifiedSince?: number;
  ifUnmodifiedSince?: number;
  ifTags?: TagCondition;
}

/** An HTTP date the client sent; an unreadable one is ignored, as HTTP says. */
function dateHeader(op: Operation, name: string): number | undefined {
  const value = header(op, name);
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

export function conditionsOf(op: Operation): Conditions {
  const conditions: Conditions = {};
  const ifMatch = header(op, 'if-match');
  const ifNoneMatch = header(op, 'if-none-match');
  const ifModifiedSince = dateHeader(op, 'if-modified-since');
  const ifUnmodifiedSince = dateHeader(op, 'if-unmodified-since');
  const ifTags = header(op, 'x-ms-if-tags');
  if (ifMatch) conditions.ifMatch = ifMatch;
  if (ifNoneMatch) conditions.ifNoneMatch = ifNoneMatch;
  if (ifModifiedSince !== undefined) conditions.ifModifiedSince = ifModifiedSince;
  if (ifUnmodifiedSince !== undefined) conditions.ifUnmodifiedSince = ifUnmodifiedSince;
  if (ifTags) conditions.ifTags = parseTagCondition(ifTags, 'x-ms-if-tags');
  return conditions;
}

/** Whether an If-Match / If-None-Match value names the ETag (`*` names anything that exists). */
function namesEtag(value: string, etag: string): boolean {
  if (value === '*') return true;
  const bare = etag.replace(/^"|"$/g, '');
  return value.split(',').some((v) => {
    const given = v.trim().replace(/^W\//, '');
    return given === etag || given === bare;
  });
}

/** Modification times compare at the second, as HTTP dates carry them. */
const seconds = (ms: number) => Math.floor(ms / 1000);

/**
 * The conditions of a write (or a delete) against what it would change. `If-None-Match: *`
 * on something that exists is the caller's to answer (409 BlobAlreadyExists for Put Blob).
 */
export function checkWriteConditions(conditions: Conditions, target: Conditional | undefined): void {
  if (!target) {
    if (conditions.ifMatch) throw errors.conditionNotMet();
    return;
  }
  if (conditions.ifMatch && !namesEtag(conditions.ifMatch, target.etag)) throw errors.conditionNotMet();
  if (conditions.ifNoneMatch && conditions.ifNoneMatch !== '*' && namesEtag(conditions.ifNoneMatch, target.etag)) throw errors.conditionNotMet();
  if (conditions.ifModifiedSince !== undefined && seconds(target.modified) <= seconds(conditions.ifModifiedSince)) throw errors.conditionNotMet();
  if (conditions.ifUnmodifiedSince !== undefined && seconds(target.modified) > seconds(conditions.ifUnmodifiedSince)) throw errors.conditionNotMet();
  if (conditions.ifTags && !matchesTagCondition(conditions.ifTags, target.tags ?? {})) throw errors.conditionNotMet();
}

/** The conditions of a read: 'not-modified' is a 304; a failed If-Match, If-Unmodified-Since or tag condition is a 412. */
export function checkReadConditions(conditions: Conditions, target: Conditional): 'ok' | 'not-modified' {
  if (conditions.ifMatch && !namesEtag(conditions.ifMatch, target.etag)) throw errors.conditionNotMet();
  if (conditions.ifUnmodifiedSince !== undefined && seconds(target.modified) > seconds(conditions.ifUnmodifiedSince)) throw errors.conditionNotMet();
  if (conditions.ifTags && !matchesTagCondition(conditions.ifTags, target.tags ?? {})) throw errors.conditionNotMet();
  if (conditions.ifNoneMatch && namesEtag(conditions.ifNoneMatch, target.etag)) return 'not-modified';
  if (conditions.ifModifiedSince !== undefined && seconds(target.modified) <= seconds(conditions.ifModifiedSince)) return 'not-modified';
  return 'ok';
}
