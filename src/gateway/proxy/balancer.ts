/**
 * Kong's upstream load balancing, `round-robin` algorithm: a service whose
 * host is an upstream's name is sent to that upstream's targets in
 * proportion to their weights. Kong builds a wheel of weight/gcd slots per
 * target and walks it; this walks the same proportions with nginx's smooth
 * weighted round robin, so a target of weight w gets exactly w/gcd of every
 * sum(w)/gcd requests, spread out rather than in runs, and the order is
 * deterministic. A try that fails moves to the next target, as Kong's
 * balancer moves to the next peer, skipping the targets that already
 * failed this request while others remain. Targets the upstream's passive
 * health checks marked unhealthy get nothing (health.ts).
 */
import { DEFAULT_TARGET_PORT, parseTarget } from '../config/entities.ts';
import { GatewayError, MESSAGES } from '../errors.ts';
import type { Service, Target, Upstream } from '../config/model.ts';
import type { UpstreamHealth } from './health.ts';

/** One usable target: the service as it reaches that target (its own pool), and its Host header. */
export interface Peer {
  /** The target as the file names it (`host:port`), what health is kept by. */
  readonly target: string;
  readonly service: Service;
  readonly hostHeader: string;
  readonly weight: number;
  current: number;
}

/** The Host header for an origin: the port shown unless it is the scheme's default. */
export function hostHeader(host: string, port: number, protocol: string): string {
  const shown = host.includes(':') ? `[${host}]` : host;
  return (protocol === 'http' && port === 80) || (protocol === 'https' && port === 443) ? shown : `${shown}:${port}`;
}

export class Balancer {
  /** Targets with a weight above 0 (weight 0 disables a target), in file order. */
  readonly peers: readonly Peer[];

  constructor(
    service: Service,
    upstream: Upstream,
    targets: readonly Target[],
    readonly health: UpstreamHealth,
  ) {
    this.peers = targets
      .filter((t) => t.weight > 0)
      .map((t) => {
        const { host, port } = parseTarget(t.target)!;
        const at = port ?? DEFAULT_TARGET_PORT;
        // One object per target for the whole life of the configuration, so the upstream pools find it in their cache.
        const peerService: Service = { ...service, host, port: at };
        // Kong sends the upstream's host_header, else the target's host (with its port unless the scheme's default).
        return {
          target: t.target,
          service: peerService,
          hostHeader: upstream.host_header ?? hostHeader(host, at, service.protocol),
          weight: t.weight,
          current: 0,
        };
      });
  }

  /**
   * The next target: the one with the highest running weight, among those
   * not in `failed` (all of them when every one has failed). No usable
   * target is Kong's 503.
   */
  pick(failed: readonly Peer[] = []): Peer {
    const peers = this.health.enabled ? this.peers.filter((p) => this.health.isHealthy(p.target)) : this.peers;
    if (peers.length === 0) throw new GatewayError(503, MESSAGES.noPeer);
    const everyOneFailed = failed.length >= peers.length && peers.every((p) => failed.includes(p));
    let best: Peer | null = null;
    let total = 0;
    for (const peer of peers) {
      if (!everyOneFailed && failed.length && failed.includes(peer)) continue;
      peer.current += peer.weight;
      total += peer.weight;
      if (!best || peer.current > best.current) best = peer;
    }
    best!.current -= total;
    return best!;
  }
}
