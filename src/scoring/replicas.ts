/**
 * The scoring replicas behind one front-end service: requests go round-robin
 * over the healthy ones; a replica that refuses a connection is marked
 * unhealthy and the request moves on to the next; a background check of
 * GET /ready brings replicas back (or takes them out) every interval.
 */
import { Pool } from 'undici';
import type { Logger } from 'pino';
import { badGateway } from './errors.ts';

export interface UpstreamResponse {
  statusCode: number;
  contentType: string | undefined;
  body: Buffer;
}

interface Replica {
  origin: string;
  pool: Pool;
  healthy: boolean;
}

export interface ReplicaSetOptions {
  healthIntervalMs: number;
  timeoutMs: number;
  logger: Logger;
}

export class ReplicaSet {
  private readonly replicas: Replica[];
  private next = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    readonly service: string,
    origins: readonly string[],
    private readonly options: ReplicaSetOptions,
  ) {
    this.replicas = origins.map((origin) => ({
      origin,
      healthy: true,
      pool: new Pool(origin, { connections: 32, connectTimeout: options.timeoutMs, headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs }),
    }));
  }

  get origins(): string[] {
    return this.replicas.map((r) => r.origin);
  }

  get healthyCount(): number {
    return this.replicas.filter((r) => r.healthy).length;
  }

  /** Checks every replica now, then every interval until close(). */
  async startHealthChecks(): Promise<void> {
    await this.checkAll();
    this.timer = setInterval(() => void this.checkAll(), this.options.healthIntervalMs);
    this.timer.unref();
  }

  async checkAll(): Promise<void> {
    await Promise.all(this.replicas.map((replica) => this.check(replica)));
  }

  private async check(replica: Replica): Promise<void> {
    let healthy = false;
    try {
      const response = await replica.pool.request({ path: '/ready', method: 'GET', headersTimeout: this.options.healthIntervalMs });
      await response.body.dump();
      healthy = response.statusCode === 200;
    } catch {
      healthy = false;
    }
    this.mark(replica, healthy);
  }

  private mark(replica: Replica, healthy: boolean): void {
    if (replica.healthy !== healthy) this.options.logger.warn({ service: this.service, replica: replica.origin, healthy }, 'scoring replica health changed');
    replica.healthy = healthy;
  }

  /** Healthy replicas from the round-robin position on, then the unhealthy ones as a last resort. */
  private order(): Replica[] {
    const start = this.next++ % this.replicas.length;
    const rotated = [...this.replicas.slice(start), ...this.replicas.slice(0, start)];
    return [...rotated.filter((r) => r.healthy), ...rotated.filter((r) => !r.healthy)];
  }

  /**
   * Sends the body unchanged to a replica's path and returns its answer
   * unchanged. Scoring has no side effects, so a request that could not be
   * delivered is safely tried on the next replica.
   */
  async forward(path: string, body: Buffer, contentType: string | undefined): Promise<UpstreamResponse> {
    const failures: string[] = [];
    for (const replica of this.order()) {
      try {
        const response = await replica.pool.request({
          path,
          method: 'POST',
          body,
          headers: { 'content-type': contentType ?? 'application/json' },
        });
        const answer = Buffer.from(await response.body.arrayBuffer());
        const type = response.headers['content-type'];
        return { statusCode: response.statusCode, contentType: Array.isArray(type) ? type[0] : type, body: answer };
      } catch (err) {
        this.mark(replica, false);
        failures.push(`${replica.origin}: ${(err as Error).message}`);
      }
    }
    throw badGateway(`no scoring replica of service "${this.service}" answered (${failures.join('; ')})`);
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await Promise.all(this.replicas.map((r) => r.pool.close()));
  }
}
