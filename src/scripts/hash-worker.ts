/** The worker thread that checks passwords against htpasswd hashes for HashVerifier. */
import { serveTasks } from '../common/worker-pool.ts';
import { passwordMatches, type Entry } from './hashes.ts';

export interface HashCheck {
  password: string;
  entry: Entry;
}

await serveTasks<HashCheck, boolean>(async () => (check) => passwordMatches(check.password, check.entry));
