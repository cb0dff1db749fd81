/**
 * Leases on blobs and containers (Lease Blob, Lease Container): acquire, renew, change,
 * release and break, and the lease condition every write to a leased blob (and the
 * deletion of a leased container) must meet. A lease's state is computed from its record
 * and the clock, so a fixed lease expires and a break completes without a timer:
 *   available  no lease, or released
 *   leased     held (infinite, or fixed and not yet run out)
 *   expired    a fixed lease that ran out
 *   breaking   broken with a break period that has not passed (still held)
 *   broken     broken, and the period passed
 */
import { randomUUID } from 'node:crypto';
import { errors, type LeaseTarget } from '../errors.ts';
import type { LeaseRecord } from '../persistence/store.ts';
import { header, type Operation } from './context.ts';

export type LeaseState = 'available' | 'leased' | 'expired' | 'breaking' | 'broken';

export function leaseState(lease: LeaseRecord | undefined, now: number): LeaseState {
  if (!lease) return 'available';
  if (lease.breaks !== undefined) return now >= lease.breaks ? 'broken' : 'breaking';
  if (lease.expires !== undefined && now >= lease.expires) return 'expired';
  return 'leased';
}

/** Whether the lease still holds: a write needs its id. */
function isActive(state: LeaseState): boolean {
  return state === 'leased' || state === 'breaking';
}

/** x-ms-lease-state, -status and -duration of a blob or container (duration only while leased). */
export function leaseHeaders(lease: LeaseRecord | undefined, now: number): Record<string, string> {
  const state = leaseState(lease, now);
  const headers: Record<string, string> = { 'x-ms-lease-state': state, 'x-ms-lease-status': isActive(state) ? 'locked' : 'unlocked' };
  if (state === 'leased') headers['x-ms-lease-duration'] = lease!.duration === -1 ? 'infinite' : 'fixed';
  return headers;
}

/** The same, as listing XML elements. */
export function leaseElements(lease: LeaseRecord | undefined, now: number): Record<string, string> {
  const headers = leaseHeaders(lease, now);
  return {
    LeaseStatus: headers['x-ms-lease-status']!,
    LeaseState: headers['x-ms-lease-state']!,
    ...(headers['x-ms-lease-duration'] ? { LeaseDuration: headers['x-ms-lease-duration'] } : {}),
  };
}

/**
 * The lease condition of a write to a blob or container: with an active lease the request
 * must name it (`x-ms-lease-id`); naming a lease where none holds fails too.
 */
export function checkLeaseCondition(op: Operation, lease: LeaseRecord | undefined, now: number, target: LeaseTarget): void {
  const given = header(op, 'x-ms-lease-id');
  const active = isActive(leaseState(lease, now));
  if (active && !given) throw errors.leaseIdMissing(target);
  if (given && !active) throw errors.leaseNotPresentWithOperation(target);
  if (given && given.toLowerCase() !== lease!.id.toLowerCase()) throw errors.leaseIdMismatchWithOperation(target);
}

/** A read that names a lease must name the active one. */
export function checkReadLease(op: Operation, lease: LeaseRecord | undefined, now: number): void {
  const given = header(op, 'x-ms-lease-id');
  if (!given) return;
  if (!isActive(leaseState(lease, now))) throw errors.leaseNotPresentWithOperation('blob');
  if (given.toLowerCase() !== lease!.id.toLowerCase()) throw errors.leaseIdMismatchWithOperation('blob');
}

const LEASE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function leaseIdHeader(op: Operation, name: 'x-ms-lease-id' | 'x-ms-proposed-lease-id', required: boolean): string | undefined {
  const value = header(op, name);
  if (value === undefined) {
    if (required) throw errors.missingHeader(name);
    return undefined;
  }
  if (!LEASE_ID.test(value)) throw errors.invalidHeader(name, value);
  return value.toLowerCase();
}

/** `x-ms-lease-duration`: -1 (infinite) or 15-60 seconds. */
function durationHeader(op: Operation): number {
  const raw = header(op, 'x-ms-lease-duration');
  if (raw === undefined) throw errors.missingHeader('x-ms-lease-duration');
  const value = Number(raw);
  if (!/^-?\d+$/.test(raw) || (value !== -1 && (value < 15 || value > 60))) throw errors.invalidHeader('x-ms-lease-duration', raw);
  return value;
}

/** `x-ms-lease-break-period`: 0-60 seconds, absent for "the rest of the lease". */
function breakPeriodHeader(op: Operation): number | undefined {
  const raw = header(op, 'x-ms-lease-break-period');
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value > 60) throw errors.invalidHeader('x-ms-lease-break-period', raw);
  return value;
}

function held(id: string, duration: number, now: number): LeaseRecord {
  return duration === -1 ? { id, duration } : { id, duration, expires: now + duration * 1000 };
}

export type LeaseAction = 'acquire' | 'renew' | 'change' | 'release' | 'break';

/** A lease request, read from its headers before the record is looked at. */
export interface LeaseRequest {
  action: LeaseAction;
  apply(lease: LeaseRecord | undefined, now: number): { lease: LeaseRecord | undefined; headers: Record<string, string>; status: number };
}

/** Reads `x-ms-lease-action` and its headers; `apply` then runs it against the current lease. */
export function leaseRequest(op: Operation): LeaseRequest {
  const action = header(op, 'x-ms-lease-action');
  switch (action) {
    case 'acquire': {
      const duration = durationHeader(op);
      const proposed = leaseIdHeader(op, 'x-ms-proposed-lease-id', false) ?? randomUUID();
      return {
        action,
        apply(lease, now) {
          const state = leaseState(lease, now);
          if (state === 'breaking') throw errors.leaseIsBreaking('Acquired');
          if (state === 'leased' && lease!.id !== proposed) throw errors.leaseAlreadyPresent();
          return { lease: held(proposed, duration, now), headers: { 'x-ms-lease-id': proposed }, status: 201 };
        },
      };
    }
    case 'renew': {
      const id = leaseIdHeader(op, 'x-ms-lease-id', true)!;
      return {
        action,
        apply(lease, now) {
          const state = leaseState(lease, now);
          if (!lease || state === 'available') throw errors.leaseNotPresentWithLeaseOperation();
          if (lease.id !== id) throw errors.leaseIdMismatchWithLeaseOperation();
          if (state === 'breaking' || state === 'broken') throw errors.leaseIsBrokenAndCannotBeRenewed();
          return { lease: held(id, lease.duration, now), headers: { 'x-ms-lease-id': id }, status: 200 };
        },
      };
    }
    case 'change': {
      const id = leaseIdHeader(op, 'x-ms-lease-id', true)!;
      const proposed = leaseIdHeader(op, 'x-ms-proposed-lease-id', true)!;
      return {
        action,
        apply(lease, now) {
          const state = leaseState(lease, now);
          if (!lease || !isActive(state)) throw errors.leaseNotPresentWithLeaseOperation();
          if (state === 'breaking') throw errors.leaseIsBreaking('Changed');
          if (lease.id !== id && lease.id !== proposed) throw errors.leaseIdMismatchWithLeaseOperation();
          return { lease: { ...lease, id: proposed }, headers: { 'x-ms-lease-id': proposed }, status: 200 };
        },
      };
    }
    case 'release': {
      const id = leaseIdHeader(op, 'x-ms-lease-id', true)!;
      return {
        action,
        apply(lease, now) {
          if (!lease || leaseState(lease, now) === 'available') throw errors.leaseNotPresentWithLeaseOperation();
          if (lease.id !== id) throw errors.leaseIdMismatchWithLeaseOperation();
          return { lease: undefined, headers: {}, status: 200 };
        },
      };
    }
    case 'break': {
      const period = breakPeriodHeader(op);
      return {
        action,
        apply(lease, now) {
          const state = leaseState(lease, now);
          if (!lease || state === 'available') throw errors.leaseNotPresentWithLeaseOperation();
          if (state === 'broken' || state === 'expired') {
            return { lease: { ...lease, breaks: Math.min(lease.breaks ?? now, now) }, headers: { 'x-ms-lease-time': '0' }, status: 202 };
          }
          // A break period shortens the lease's remaining time, never lengthens it.
          const remaining =
            state === 'breaking' ? lease.breaks! - now : lease.expires !== undefined ? lease.expires - now : period === undefined ? 0 : Infinity;
          const wait = Math.max(0, Math.min(period === undefined ? remaining : period * 1000, remaining));
          return { lease: { ...lease, breaks: now + wait }, headers: { 'x-ms-lease-time': String(Math.ceil(wait / 1000)) }, status: 202 };
        },
      };
    }
    default:
      throw action === undefined ? errors.missingHeader('x-ms-lease-action') : errors.invalidHeader('x-ms-lease-action', action);
  }
}
