/**
 * The hub's shared access policies and what each may do. The built-in
 * policies of the real hub, each with exactly its rights: a service key can
 * send messages and work twins but not read device keys, a registry key can
 * manage devices but not reach them.
 */
import type { SymmetricKeys } from './registry.ts';
import { generateKey } from './sas.ts';

export type Right = 'registryRead' | 'registryWrite' | 'serviceConnect' | 'deviceConnect';

export const POLICY_RIGHTS: Readonly<Record<string, readonly Right[]>> = {
  iothubowner: ['registryRead', 'registryWrite', 'serviceConnect', 'deviceConnect'],
  service: ['serviceConnect'],
  device: ['deviceConnect'],
  registryRead: ['registryRead'],
  registryReadWrite: ['registryRead', 'registryWrite'],
};

export type Policies = Record<string, SymmetricKeys>;

export function hasRight(policyName: string, right: Right): boolean {
  return Object.hasOwn(POLICY_RIGHTS, policyName) && POLICY_RIGHTS[policyName]!.includes(right);
}

export function newPolicies(): Policies {
  return Object.fromEntries(Object.keys(POLICY_RIGHTS).map((name) => [name, { primaryKey: generateKey(), secondaryKey: generateKey() }]));
}

/** Policies a store made before a built-in one was added get it, keeping the keys they have. */
export function withMissingPolicies(stored: Policies): { policies: Policies; added: boolean } {
  const missing = Object.keys(POLICY_RIGHTS).filter((name) => !Object.hasOwn(stored, name));
  if (!missing.length) return { policies: stored, added: false };
  const fresh = newPolicies();
  return { policies: { ...stored, ...Object.fromEntries(missing.map((name) => [name, fresh[name]!])) }, added: true };
}
