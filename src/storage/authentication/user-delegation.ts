/**
 * User delegation keys (Get User Delegation Key) and what they sign. A key is derived
 * from the account key and the fields that describe it (object id, tenant, start, expiry,
 * service, version), so it need not be stored: a user delegation SAS carries those fields
 * (skoid … skv) and the key is derived again to check its signature. Rotating the account
 * key revokes every key made with it, as at the service. What the SAS may do is also
 * bounded by the data roles of the object id that asked for the key, checked at use.
 */
import { createHmac } from 'node:crypto';
import type { StorageAccount } from '../persistence/accounts.ts';

export interface UserDelegationKeyFields {
  objectId: string;
  tenantId: string;
  start: string;
  expiry: string;
  service: string;
  version: string;
}

/** The key's value: base64 of 32 bytes, derived with one of the account's keys (the first makes new keys). */
export function userDelegationKeyValue(account: StorageAccount, fields: UserDelegationKeyFields, keyIndex = 0): string {
  const described = [fields.objectId, fields.tenantId, fields.start, fields.expiry, fields.service, fields.version].join('\n');
  return createHmac('sha256', Buffer.from(account.keys[keyIndex]!, 'base64')).update(`user-delegation-key\n${described}`).digest('base64');
}

/** The longest a user delegation key may be valid, as the service allows. */
export const MAX_USER_DELEGATION_KEY_MS = 7 * 24 * 3600 * 1000;
