/**
 * The hub's service credential: a connection string
 * `HostName=…;SharedAccessKeyName=…;SharedAccessKey=…` turned into the
 * `SharedAccessSignature` header its REST API takes (signature over the
 * URL-encoded host name and the expiry, with the policy key).
 */
import { createHmac } from 'node:crypto';
import { connectionStringFields } from './connection-string.ts';
import { InvalidInputError } from './errors.ts';

const TOKEN_LIFETIME_S = 3600;

/** Makes fresh tokens for a service connection string; throws when it lacks a field. */
export function hubServiceToken(connectionString: string): () => string {
  const f = connectionStringFields(connectionString);
  const host = f.get('HostName');
  const policy = f.get('SharedAccessKeyName');
  const key = f.get('SharedAccessKey');
  if (!host || !policy || !key) {
    throw new InvalidInputError('the hub connection string needs HostName, SharedAccessKeyName and SharedAccessKey');
  }
  const resource = encodeURIComponent(host);
  return () => {
    const expiry = Math.floor(Date.now() / 1000) + TOKEN_LIFETIME_S;
    const signature = createHmac('sha256', Buffer.from(key, 'base64')).update(`${resource}\n${expiry}`).digest('base64');
    return `SharedAccessSignature sr=${resource}&sig=${encodeURIComponent(signature)}&se=${expiry}&skn=${encodeURIComponent(policy)}`;
  };
}
