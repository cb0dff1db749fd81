/**
 * prometheus (Kong PRIORITY 13): counts what the proxy answered under
 * Kong's metric names, on the admin API's /metrics beside offcloud's own.
 * As in Kong 3.x, the per-request figures are each switched on by the
 * config: `status_code_metrics` (kong_http_requests_total),
 * `latency_metrics` (kong_request_latency_ms, kong_upstream_latency_ms,
 * kong_kong_latency_ms), `bandwidth_metrics` (kong_bandwidth_bytes), with
 * the consumer label filled in under `per_consumer`.
 */
import type { Field } from '../../config/schema.ts';
import type { Series } from '../series.ts';
import { renderSeries } from '../series.ts';
import { definePlugin, type AnswerLog, type RequestContext } from '../types.ts';

interface PrometheusConfig {
  per_consumer: boolean;
  status_code_metrics: boolean;
  latency_metrics: boolean;
  bandwidth_metrics: boolean;
  upstream_health_metrics: boolean;
}

const prometheusFields: Record<string, Field> = {
  per_consumer: { type: 'boolean', default: false },
  status_code_metrics: { type: 'boolean', default: false },
  latency_metrics: { type: 'boolean', default: false },
  bandwidth_metrics: { type: 'boolean', default: false },
  upstream_health_metrics: {
    type: 'boolean',
    default: false,
    noEffect: 'target health is not exported as metrics (see the admin API /upstreams/{name}/health)',
    asIf: false,
  },
  ai_metrics: { type: 'boolean', default: false, noEffect: 'no AI plugins here', asIf: false },
  wasm_metrics: { type: 'boolean', default: false, noEffect: 'no WebAssembly filters here', asIf: false },
};

/** Kong's latency buckets, ms. */
const LATENCY_BUCKETS = [1, 2, 5, 7, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 1000, 2000, 5000, 10000, 30000, 60000];

export const KONG_METRICS = {
  kong_http_requests_total: { type: 'counter', help: 'HTTP status codes per consumer/service/route in Kong' },
  kong_request_latency_ms: { type: 'histogram', help: 'Total latency incurred during requests for each service/route in Kong' },
  kong_upstream_latency_ms: { type: 'histogram', help: 'Latency added by upstream response for each service/route in Kong' },
  kong_kong_latency_ms: { type: 'histogram', help: 'Latency added by Kong and enabled plugins for each service/route in Kong' },
  kong_bandwidth_bytes: { type: 'counter', help: 'Total bandwidth (ingress/egress) throughput in bytes' },
  kong_nginx_requests_total: { type: 'gauge', help: 'Number of requests total' },
  kong_nginx_connections_total: { type: 'gauge', help: 'Number of connections by subsystem' },
  kong_datastore_reachable: { type: 'gauge', help: 'Datastore reachable from Kong, 0 is unreachable' },
} as const;

const name = (entity: { id: string; name: string | null }) => entity.name ?? entity.id;

function observe(add: (name: string, labels: Record<string, string>, value: number) => void, metric: string, labels: Record<string, string>, ms: number) {
  for (const le of LATENCY_BUCKETS) if (ms <= le) add(`${metric}_bucket`, { ...labels, le: String(le) }, 1);
  add(`${metric}_bucket`, { ...labels, le: '+Inf' }, 1);
  add(`${metric}_sum`, labels, ms);
  add(`${metric}_count`, labels, 1);
}

export const prometheus = definePlugin<PrometheusConfig>({ name: 'prometheus', priority: 13, configFields: prometheusFields }, (conf, env) => {
  const add = env.series.add.bind(env.series);
  return {
    access() {},
    log(ctx: RequestContext, entry: AnswerLog) {
      const service = name(ctx.service);
      const route = name(ctx.route);
      const consumer = conf.per_consumer && ctx.consumer ? (ctx.consumer.username ?? ctx.consumer.custom_id ?? '') : '';
      if (conf.status_code_metrics) {
        add('kong_http_requests_total', { service, route, code: String(entry.status), source: entry.source, workspace: 'default', consumer }, 1);
      }
      if (conf.latency_metrics) {
        const labels = { service, route, workspace: 'default' };
        const latency = Math.round(entry.latency);
        observe(add, 'kong_request_latency_ms', labels, latency);
        if (entry.source === 'service') observe(add, 'kong_upstream_latency_ms', labels, Math.round(entry.upstreamLatency));
        observe(add, 'kong_kong_latency_ms', labels, Math.max(0, Math.round(entry.latency - entry.upstreamLatency)));
      }
      if (conf.bandwidth_metrics) {
        add('kong_bandwidth_bytes', { service, route, direction: 'ingress', workspace: 'default', consumer }, entry.requestSize);
        add('kong_bandwidth_bytes', { service, route, direction: 'egress', workspace: 'default', consumer }, entry.responseSize);
      }
    },
  };
});

/** Kong's /metrics text for the series the proxy processes kept, with the node figures Kong always exposes. */
export function renderKongMetrics(series: Series[], node: { requests: number; active: number; accepted: number }): string {
  const always: Series[] = [
    { name: 'kong_datastore_reachable', labels: {}, value: 1 },
    { name: 'kong_nginx_requests_total', labels: {}, value: node.requests },
    { name: 'kong_nginx_connections_total', labels: { subsystem: 'http', state: 'active' }, value: node.active },
    { name: 'kong_nginx_connections_total', labels: { subsystem: 'http', state: 'accepted' }, value: node.accepted },
  ];
  return renderSeries([...always, ...series], KONG_METRICS);
}
