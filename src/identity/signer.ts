/**
 * Signing access tokens on every core: RS256 signing is what a token costs,
 * so the tokens are signed on a pool of worker threads, one per core (the
 * shared worker pool, DESIGN "The event loop stays free"), while the main
 * thread parses requests and answers. Each task carries the signing key's id
 * and PEM; a worker parses a key once and keeps it by id, so a rotation
 * (a new active key, a new id) reaches every worker with its next task.
 */
import { WorkerPool } from '../common/worker-pool.ts';
import type { SigningKey } from './keys.ts';
import type { SignTask } from './signer-worker.ts';

export type JwtHeader = SignTask['header'];

export class TokenSigner {
  private constructor(private readonly pool: WorkerPool<SignTask, string>) {}

  /** Starts `threads` signing workers and waits until each is ready. */
  static async start(threads: number): Promise<TokenSigner> {
    const module = new URL('./signer-worker.ts', import.meta.url);
    return new TokenSigner(await WorkerPool.start<SignTask, string>({ name: 'identity token signing', module, size: threads }));
  }

  /** The compact JWS of `claims` under `header`, signed with `key`. */
  sign(key: SigningKey, header: JwtHeader, claims: Record<string, unknown>): Promise<string> {
    return this.pool.run({ kid: key.kid, privateKeyPem: key.privateKeyPem, header, claims });
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
