/**
 * Signing access tokens on every core: RS256 signing is what a token costs,
 * so the tokens are signed on a pool of worker threads, one per core (the
 * shared worker pool, DESIGN "The event loop stays free"), while the main
 * thread parses requests and answers.
 *
 * A message to a thread and its answer each wake a thread, which costs about
 * half a signature on a busy machine, so the tokens asked for in one turn of
 * the event loop go together: one message per thread at most, the batch split
 * evenly over the threads. Each message carries the PEM of the keys its tokens
 * name; a thread parses a key once and keeps it by id, so a rotation (a new
 * active key, a new id) reaches every thread with its next message.
 */
import { WorkerPool } from '../common/worker-pool.ts';
import type { SigningKey } from './keys.ts';
import type { SignBatch, SignItem } from './signer-worker.ts';

export type JwtHeader = SignItem['header'];

interface Waiting {
  key: SigningKey;
  item: SignItem;
  resolve(token: string): void;
  reject(err: Error): void;
}

export class TokenSigner {
  private waiting: Waiting[] = [];

  private constructor(
    private readonly pool: WorkerPool<SignBatch, string[]>,
    private readonly threads: number,
  ) {}

  /** Starts `threads` signing workers and waits until each is ready. */
  static async start(threads: number): Promise<TokenSigner> {
    const module = new URL('./signer-worker.ts', import.meta.url);
    return new TokenSigner(await WorkerPool.start<SignBatch, string[]>({ name: 'identity token signing', module, size: threads }), threads);
  }

  /** The compact JWS of `claims` under `header`, signed with `key`. */
  sign(key: SigningKey, header: JwtHeader, claims: Record<string, unknown>): Promise<string> {
    return new Promise((resolve, reject) => {
      if (this.waiting.push({ key, item: { kid: key.kid, header, claims }, resolve, reject }) === 1) setImmediate(() => this.send());
    });
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  /** This turn's tokens, in at most one batch per thread. */
  private send(): void {
    const waiting = this.waiting;
    this.waiting = [];
    const batches = Math.min(this.threads, waiting.length);
    for (let b = 0; b < batches; b++) {
      const part = waiting.slice(Math.floor((b * waiting.length) / batches), Math.floor(((b + 1) * waiting.length) / batches));
      const keys: SignBatch['keys'] = {};
      for (const { key } of part) keys[key.kid] = key.privateKeyPem;
      this.pool.run({ keys, items: part.map((w) => w.item) }).then(
        (tokens) => part.forEach((w, i) => w.resolve(tokens[i]!)),
        (err: Error) => part.forEach((w) => w.reject(err)),
      );
    }
  }
}
