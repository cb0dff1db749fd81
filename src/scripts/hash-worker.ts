/** The worker thread that checks passwords against htpasswd hashes, one request at a time, for HashVerifier. */
import { parentPort } from 'node:worker_threads';
import { passwordMatches, type Entry } from './hashes.ts';

export interface HashCheck {
  id: number;
  password: string;
  entry: Entry;
}

export interface HashAnswer {
  id: number;
  matches: boolean;
}

parentPort?.on('message', (check: HashCheck) => {
  void passwordMatches(check.password, check.entry).then(
    (matches) => parentPort?.postMessage({ id: check.id, matches } satisfies HashAnswer),
    () => parentPort?.postMessage({ id: check.id, matches: false } satisfies HashAnswer),
  );
});
