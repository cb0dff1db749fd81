/**
 * What one process's proxy has answered, kept for the admin API: counts by
 * route and status, counts of the requests a plugin refused, and a ring of
 * the last requests. Each answer costs a map lookup, an integer increment
 * and a few stores into a slot allocated up front; the admin API reads the
 * figures when asked (from worker processes over IPC, at that moment) and
 * merges them (mergeTraffic).
 */
import { performance } from 'node:perf_hooks';
import type { Consumer, Route, Service } from '../config/model.ts';
import { mergeSeries, type PluginSeries, type Series } from '../plugins/series.ts';

/** How many of the last requests each proxy process keeps. */
export const RECENT_REQUESTS = 200;

/** What the proxy knows of a request when it answers (its RequestContext is one). */
export interface AnsweredRequest {
  requestId: string;
  method: string;
  /** The path without the query string (where API keys may be): normalized once routed, as sent for a request no route matched. */
  path: string;
  route: Route | null;
  service: Service | null;
  consumer: Consumer | null;
}

/** Answers with one status on one route (`''` for requests no route matched). */
export interface AnswerCount {
  service: string;
  route: string;
  status: number;
  count: number;
}

/** Requests a plugin answered itself instead of proxying them (a 401 of key-auth, a 429 of rate-limiting). */
export interface RejectionCount extends AnswerCount {
  plugin: string;
}

export interface Tally {
  answers: AnswerCount[];
  rejections: RejectionCount[];
  /** Plugins' counters under other products' names (prometheus's kong_*). */
  series: Series[];
}

/** One proxied request, as GET /_offcloud/requests lists it. */
export interface RecentRequest {
  /** When it arrived, ms since the epoch (fractional: requests of several processes are merged in order). */
  time: number;
  request_id: string;
  method: string;
  path: string;
  route: string | null;
  service: string | null;
  consumer: string | null;
  status: number;
  /** From its arrival to the answer's head (Kong's proxy latency plus upstream latency). */
  latency_ms: number;
}

/** The figures of one process, or of all of them merged. */
export interface TrafficReport {
  tally: Tally;
  /** Newest first. */
  recent: RecentRequest[];
}

function label(entity: { id: string; name: string | null } | null): string {
  return entity === null ? '' : (entity.name ?? entity.id);
}

interface Bucket {
  service: string;
  route: string;
  statuses: Map<number, number>;
}

interface Slot extends AnsweredRequest {
  startedAt: number;
  status: number;
  latency: number;
}

export class ProxyTraffic {
  /** `series`: where this process's plugins keep their own counters, reported with the rest. */
  constructor(private readonly series: PluginSeries) {}

  /** By route id (`''`: no route matched); labels are the route's and service's when first counted. */
  private readonly answers = new Map<string, Bucket>();
  private readonly rejections = new Map<string, RejectionCount>();
  private readonly ring: Slot[] = Array.from({ length: RECENT_REQUESTS }, () => ({
    startedAt: 0,
    requestId: '',
    method: '',
    path: '',
    route: null,
    service: null,
    consumer: null,
    status: 0,
    latency: 0,
  }));
  private next = 0;
  private filled = 0;

  /** An answer's head is going out: `startedAt` is the request's arrival (performance.now()), `latency` ms since. */
  answered(request: AnsweredRequest, status: number, startedAt: number, latency: number): void {
    const routeId = request.route === null ? '' : request.route.id;
    let bucket = this.answers.get(routeId);
    if (bucket === undefined) {
      bucket = { service: label(request.service), route: label(request.route), statuses: new Map() };
      this.answers.set(routeId, bucket);
    }
    bucket.statuses.set(status, (bucket.statuses.get(status) ?? 0) + 1);
    const slot = this.ring[this.next]!;
    slot.startedAt = startedAt;
    slot.requestId = request.requestId;
    slot.method = request.method;
    slot.path = request.path;
    slot.route = request.route;
    slot.service = request.service;
    slot.consumer = request.consumer;
    slot.status = status;
    slot.latency = latency;
    this.next = this.next + 1 === RECENT_REQUESTS ? 0 : this.next + 1;
    if (this.filled < RECENT_REQUESTS) this.filled++;
  }

  /** A plugin answered the request itself (counted besides its answer). */
  rejected(plugin: string, route: Route | null, service: Service | null, status: number): void {
    const key = `${plugin}\n${route?.id ?? ''}\n${status}`;
    const found = this.rejections.get(key);
    if (found) found.count++;
    else this.rejections.set(key, { plugin, service: label(service), route: label(route), status, count: 1 });
  }

  tally(): Tally {
    const answers: AnswerCount[] = [];
    for (const { service, route, statuses } of this.answers.values()) {
      for (const [status, count] of statuses) answers.push({ service, route, status, count });
    }
    return { answers, rejections: [...this.rejections.values()].map((r) => ({ ...r })), series: this.series.snapshot() };
  }

  /** The last requests, newest first. */
  recent(): RecentRequest[] {
    const recent: RecentRequest[] = [];
    for (let i = 1; i <= this.filled; i++) {
      const slot = this.ring[(this.next - i + RECENT_REQUESTS) % RECENT_REQUESTS]!;
      recent.push({
        time: performance.timeOrigin + slot.startedAt,
        request_id: slot.requestId,
        method: slot.method,
        path: slot.path,
        route: slot.route && label(slot.route),
        service: slot.service && label(slot.service),
        consumer: slot.consumer && (slot.consumer.username ?? slot.consumer.id),
        status: slot.status,
        latency_ms: Math.round(slot.latency * 100) / 100,
      });
    }
    return recent;
  }

  report(): TrafficReport {
    return { tally: this.tally(), recent: this.recent() };
  }
}

/** Sums counts with the same labels. */
function sumBy<T extends AnswerCount>(lists: T[][], key: (count: T) => string): T[] {
  const sums = new Map<string, T>();
  for (const list of lists) {
    for (const count of list) {
      const k = key(count);
      const found = sums.get(k);
      if (found) found.count += count.count;
      else sums.set(k, { ...count });
    }
  }
  return [...sums.values()];
}

/** The figures of several processes as one: counts summed by their labels, requests newest first. */
export function mergeTraffic(reports: TrafficReport[]): TrafficReport {
  return {
    tally: {
      answers: sumBy(
        reports.map((r) => r.tally.answers),
        (c) => `${c.service}\n${c.route}\n${c.status}`,
      ),
      rejections: sumBy(
        reports.map((r) => r.tally.rejections),
        (c) => `${c.plugin}\n${c.service}\n${c.route}\n${c.status}`,
      ),
      series: mergeSeries(reports.map((r) => r.tally.series)),
    },
    recent: reports.flatMap((r) => r.recent).sort((a, b) => b.time - a.time),
  };
}
