/**
 * The container side of "must stay connected to the billing endpoint to
 * verify usage" (spec §5): validates the ApiKey at start, then reports usage
 * counts at an interval. Only meter names and quantities leave the process.
 * The billing status it keeps decides whether the container serves (see
 * refusal()).
 */
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'undici';
import type { Logger } from 'pino';
import { SerialQueue } from '../common/serial-queue.ts';
import {
  API_KEY_HEADER,
  API_STATUS_MESSAGES,
  API_STATUSES,
  BILLING_PATHS,
  type ApiStatus,
  type ContainerIdentity,
  type ContainerKind,
  type Meter,
  type UsageReport,
} from './protocol.ts';

export interface BillingConnectionOptions {
  kind: ContainerKind;
  containerVersion: string;
  billingUrl: string;
  apiKey: string;
  intervalMs: number;
  /** Consecutive unreachable cycles after which the container stops serving. */
  maxFailures: number;
  logger: Logger;
  /** Per call to the billing endpoint (connect, headers, body). */
  requestTimeoutMs?: number;
}

/** Why a scoring call is refused, for the component to put in its own error shape. */
export interface BillingRefusal {
  statusCode: 401 | 403 | 503;
  code: ApiStatus;
  message: string;
  /** Seconds; set when trying again later can succeed. */
  retryAfter?: number;
}

/** A batch of counts sent under one id until billing acknowledges it, so a retry never counts twice. */
interface UsageBatch {
  reportId: string;
  periodStart: string;
  periodEnd: string;
  meters: Meter[];
}

const UNREACHABLE: ReadonlySet<ApiStatus> = new Set(['CouldNotConnect', 'BillingEndpointBusy']);
/** Billing recorded the report (over quota still counts: the usage happened). */
const RECORDED: ReadonlySet<ApiStatus> = new Set(['Valid', 'OutOfQuota']);

export class BillingConnection {
  #status: ApiStatus = 'Unknown';
  #failures = 0;
  #stoppedServing = false;
  #pending = new Map<string, number>();
  #pendingSince = new Date();
  #unsent: UsageBatch | null = null;
  #lastContact: Date | null = null;
  #timer: NodeJS.Timeout | null = null;
  readonly #calls = new SerialQueue();
  #closed = false;
  readonly #identity: ContainerIdentity;
  readonly #agent: Agent;

  constructor(private readonly options: BillingConnectionOptions) {
    this.#identity = { containerType: options.kind, containerId: randomUUID(), containerVersion: options.containerVersion };
    const timeout = options.requestTimeoutMs ?? 5000;
    this.#agent = new Agent({ connect: { timeout }, headersTimeout: timeout, bodyTimeout: timeout });
  }

  get status(): ApiStatus {
    return this.#status;
  }

  get containerId(): string {
    return this.#identity.containerId;
  }

  /** Validates the key once (so /status means something at once), then reports on a timer. */
  async start(): Promise<void> {
    this.options.logger.info(`Submitting metering to '${this.options.billingUrl}/'.`);
    await this.#run(() => this.#call(BILLING_PATHS.validate, this.#identity));
    this.#schedule();
  }

  /** Adds usage counts (documents scored, transactions); they go out with the next report. */
  record(meters: Record<string, number>): void {
    for (const [name, quantity] of Object.entries(meters)) {
      if (quantity > 0) this.#pending.set(name, (this.#pending.get(name) ?? 0) + quantity);
    }
  }

  /** null when scoring may go ahead; otherwise why not. */
  refusal(): BillingRefusal | null {
    if (this.#stoppedServing) {
      return {
        statusCode: 503,
        code: 'CouldNotConnect',
        message: `The billing endpoint could not be reached ${this.options.maxFailures} times in a row; this container stopped serving. Restore billing and restart the container.`,
      };
    }
    const message = API_STATUS_MESSAGES[this.#status];
    switch (this.#status) {
      case 'Valid':
        return null;
      case 'OutOfQuota':
        return { statusCode: 403, code: 'OutOfQuota', message };
      case 'Invalid':
      case 'Mismatch':
      case 'ContainerUseUnauthorized':
        return { statusCode: 401, code: this.#status, message };
      default:
        return { statusCode: 503, code: this.#status, message, retryAfter: Math.max(1, Math.ceil(this.options.intervalMs / 1000)) };
    }
  }

  /**
   * Whether the container is ready (GET /ready): not while billing cannot be reached (not
   * yet, or no longer) and the gate answers every scoring request 503, as the service's
   * containers are not. A key billing refused (401) or a spent quota (403) is billing's
   * answer to pass on, so the container stays ready to give it.
   */
  get ready(): boolean {
    return this.refusal()?.statusCode !== 503;
  }

  /** The body of GET /status. */
  statusReport(): Record<string, unknown> {
    return {
      apiStatus: this.#status,
      apiStatusMessage: this.refusal()?.message ?? API_STATUS_MESSAGES[this.#status],
      billingEndpoint: this.options.billingUrl,
      containerId: this.#identity.containerId,
      consecutiveFailures: this.#failures,
      lastContact: this.#lastContact?.toISOString() ?? null,
    };
  }

  /** Sends the usage counted so far now (also what each timer cycle does). */
  report(): Promise<void> {
    return this.#run(() => {
      if (!this.#unsent && this.#pending.size > 0) {
        const now = new Date();
        this.#unsent = {
          reportId: randomUUID(),
          periodStart: this.#pendingSince.toISOString(),
          periodEnd: now.toISOString(),
          meters: [...this.#pending].map(([name, quantity]) => ({ name, quantity })),
        };
        this.#pending.clear();
        this.#pendingSince = now;
      }
      const batch = this.#unsent;
      // With nothing to report the call still goes out: it is the heartbeat that re-checks the key.
      const report: UsageReport & { reportId: string } = batch
        ? { ...this.#identity, ...batch }
        : { ...this.#identity, reportId: randomUUID(), periodStart: this.#pendingSince.toISOString(), periodEnd: new Date().toISOString(), meters: [] };
      return this.#call(BILLING_PATHS.usage, report).then((status) => {
        if (batch && RECORDED.has(status)) this.#unsent = null;
        return status;
      });
    });
  }

  /** Stops the timer and sends what is left (best effort: billing may be gone). */
  async close(): Promise<void> {
    if (this.#closed) return;
    if (this.#timer) clearTimeout(this.#timer);
    if (!this.#stoppedServing) await this.report();
    this.#closed = true;
    await this.#agent.close();
  }

  /** One call at a time: a slow billing endpoint never gets overlapping reports. */
  #run(call: () => Promise<ApiStatus>): Promise<void> {
    return this.#calls.run(async () => {
      if (this.#closed) return;
      this.#setStatus(await call());
    });
  }

  #schedule(): void {
    if (this.#closed || this.#stoppedServing) return;
    this.#timer = setTimeout(() => {
      // report() catches network failures itself; anything else is logged, and the next cycle still comes.
      this.report().then(
        () => this.#schedule(),
        (err: unknown) => {
          this.options.logger.error({ err }, 'usage report failed');
          this.#schedule();
        },
      );
    }, this.options.intervalMs);
    this.#timer.unref();
  }

  async #call(path: string, body: object): Promise<ApiStatus> {
    // A second try on a fresh connection: after billing restarts, the first try may meet a pooled socket it closed.
    for (let attempt = 1; ; attempt++) {
      try {
        const response = await request(`${this.options.billingUrl}${path}`, {
          method: 'POST',
          dispatcher: this.#agent,
          headers: { 'content-type': 'application/json', [API_KEY_HEADER]: this.options.apiKey },
          body: JSON.stringify(body),
        });
        return statusFromAnswer(response.statusCode, await response.body.text());
      } catch (err) {
        if (attempt < 2) continue;
        this.options.logger.warn({ err: (err as Error).message }, `Metering attempt failed: could not reach '${this.options.billingUrl}'`);
        return 'CouldNotConnect';
      }
    }
  }

  #setStatus(status: ApiStatus): void {
    if (UNREACHABLE.has(status)) {
      this.#failures += 1;
      if (this.#failures >= this.options.maxFailures && !this.#stoppedServing) {
        this.#stoppedServing = true;
        this.options.logger.error(`billing unreachable ${this.#failures} times in a row; the container stops serving until restarted`);
      }
    } else {
      this.#failures = 0;
      this.#lastContact = new Date();
    }
    if (status !== this.#status) {
      const log = status === 'Valid' ? 'info' : 'error';
      this.options.logger[log](`Endpoint connection status changed to '${status}'.`);
    }
    this.#status = status;
  }
}

function statusFromAnswer(statusCode: number, text: string): ApiStatus {
  try {
    const parsed = JSON.parse(text) as { apiStatus?: unknown };
    if (API_STATUSES.includes(parsed.apiStatus as ApiStatus)) return parsed.apiStatus as ApiStatus;
  } catch {
    // Not our billing endpoint's JSON: judge by the status code.
  }
  if (statusCode === 429 || statusCode === 503) return 'BillingEndpointBusy';
  if (statusCode === 401) return 'Invalid';
  if (statusCode === 403) return 'Mismatch';
  // A 200 that is not a billing answer (a wrong Billing URL) proves nothing either way.
  return 'Unknown';
}
