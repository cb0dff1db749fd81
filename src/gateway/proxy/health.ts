/**
 * Kong's passive health checks (the circuit breaker) for one upstream's
 * targets: every answer or failure of a proxied request counts for the
 * target that gave it. A healthy target that reaches
 * `passive.unhealthy.http_failures` answers with a status of
 * `passive.unhealthy.http_statuses` in a row (or `tcp_failures` failed
 * connections, or `timeouts`) is marked unhealthy and gets no traffic; an
 * unhealthy one comes back after `passive.healthy.successes` answers with a
 * status of `passive.healthy.http_statuses` (which only traffic that still
 * reaches it can give: with every target unhealthy the balancer has none
 * to offer). A counter of 0 is off; all of them 0 is HEALTHCHECKS_OFF.
 */
import type { Upstream } from '../config/model.ts';

export type TargetHealth = 'HEALTHY' | 'UNHEALTHY' | 'HEALTHCHECKS_OFF';
export type Outcome = 'tcp_failure' | 'timeout' | { status: number };

interface PassiveConfig {
  healthy: { http_statuses: number[]; successes: number };
  unhealthy: { http_statuses: number[]; tcp_failures: number; timeouts: number; http_failures: number };
}

/** One target's state: healthy or not, and its run of failures (or successes, once unhealthy). */
class TargetState {
  healthy = true;
  successes = 0;
  failures = { http_failures: 0, tcp_failures: 0, timeouts: 0 };
}

export class UpstreamHealth {
  readonly enabled: boolean;
  private readonly passive: PassiveConfig;
  private readonly states = new Map<string, TargetState>();

  constructor(upstream: Upstream) {
    this.passive = (upstream.healthchecks as { passive: PassiveConfig }).passive;
    const { unhealthy } = this.passive;
    this.enabled = unhealthy.http_failures > 0 || unhealthy.tcp_failures > 0 || unhealthy.timeouts > 0;
  }

  private state(target: string): TargetState {
    let found = this.states.get(target);
    if (!found) this.states.set(target, (found = new TargetState()));
    return found;
  }

  isHealthy(target: string): boolean {
    return !this.enabled || this.state(target).healthy;
  }

  status(target: string): TargetHealth {
    return !this.enabled ? 'HEALTHCHECKS_OFF' : this.state(target).healthy ? 'HEALTHY' : 'UNHEALTHY';
  }

  /** What a proxied request to `target` came to. */
  report(target: string, outcome: Outcome): void {
    if (!this.enabled) return;
    const state = this.state(target);
    const { healthy, unhealthy } = this.passive;
    const kind =
      outcome === 'tcp_failure'
        ? 'tcp_failures'
        : outcome === 'timeout'
          ? 'timeouts'
          : unhealthy.http_statuses.includes(outcome.status)
            ? 'http_failures'
            : null;
    if (kind !== null) {
      state.successes = 0;
      if (!state.healthy || unhealthy[kind] === 0) return;
      if (++state.failures[kind] >= unhealthy[kind]) {
        state.healthy = false;
        state.failures = { http_failures: 0, tcp_failures: 0, timeouts: 0 };
      }
      return;
    }
    if (typeof outcome === 'object' && !healthy.http_statuses.includes(outcome.status)) return;
    state.failures = { http_failures: 0, tcp_failures: 0, timeouts: 0 };
    if (state.healthy || healthy.successes === 0) return;
    if (++state.successes >= healthy.successes) {
      state.healthy = true;
      state.successes = 0;
    }
  }
}
