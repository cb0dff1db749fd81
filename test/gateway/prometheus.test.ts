/** prometheus: Kong's metric names on the admin /metrics, each family switched on by its config flag as in Kong 3.x. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { echoBackend, gatewayWith } from './helpers.ts';

async function metricsOf(admin: string): Promise<string> {
  const res = await request(`${admin}/metrics`);
  return res.body.text();
}

for (const workers of [1, 2]) {
  test(`prometheus (${workers === 1 ? 'one process' : `${workers} worker processes`}): kong_http_requests_total, latency histograms and bandwidth by service and route`, async (t) => {
    const backend = await echoBackend(t);
    const gw = await gatewayWith(
      t,
      {
        _format_version: '3.0',
        plugins: [{ name: 'prometheus', config: { status_code_metrics: true, latency_metrics: true, bandwidth_metrics: true, per_consumer: true } }],
        services: [
          {
            name: 'orders',
            url: backend.url,
            routes: [
              { name: 'orders-route', paths: ['/orders'] },
              { name: 'locked', paths: ['/locked'], plugins: [{ name: 'key-auth' }] },
            ],
          },
        ],
        consumers: [{ username: 'alice', keyauth_credentials: [{ key: 'k' }] }],
      },
      { workers },
    );
    for (let i = 0; i < 3; i++) await (await request(`${gw.proxy}/orders/${i}`)).body.dump();
    await (await request(`${gw.proxy}/locked`)).body.dump();
    await (await request(`${gw.proxy}/locked?apikey=k`)).body.dump();
    const text = await metricsOf(gw.admin);
    assert.match(text, /^# TYPE kong_http_requests_total counter$/m);
    assert.match(text, /^kong_http_requests_total\{service="orders",route="orders-route",code="200",source="service",workspace="default",consumer=""\} 3$/m);
    assert.match(text, /^kong_http_requests_total\{service="orders",route="locked",code="401",source="kong",workspace="default",consumer=""\} 1$/m);
    assert.match(text, /^kong_http_requests_total\{service="orders",route="locked",code="200",source="service",workspace="default",consumer="alice"\} 1$/m);
    assert.match(text, /^# TYPE kong_request_latency_ms histogram$/m);
    assert.match(text, /^kong_request_latency_ms_bucket\{service="orders",route="orders-route",workspace="default",le="\+Inf"\} 3$/m);
    assert.match(text, /^kong_upstream_latency_ms_count\{service="orders",route="orders-route",workspace="default"\} 3$/m);
    assert.match(text, /^kong_bandwidth_bytes\{service="orders",route="orders-route",direction="egress",workspace="default",consumer=""\} \d+$/m);
    assert.match(text, /^kong_datastore_reachable 1$/m);
    assert.match(text, /^kong_nginx_requests_total \d+$/m);
    assert.match(text, /^offcloud_gateway_proxy_responses_total\{/m, "offcloud's own figures stay");
  });
}

test("prometheus with Kong's defaults: only the node figures; without the plugin, no kong_* at all", async (t) => {
  const backend = await echoBackend(t);
  const withPlugin = await gatewayWith(t, {
    _format_version: '3.0',
    plugins: [{ name: 'prometheus' }],
    services: [{ name: 's', url: backend.url, routes: [{ paths: ['/'] }] }],
  });
  await (await request(`${withPlugin.proxy}/`)).body.dump();
  const text = await metricsOf(withPlugin.admin);
  assert.match(text, /^kong_nginx_requests_total \d+$/m);
  assert.doesNotMatch(text, /kong_http_requests_total|kong_request_latency_ms/);
  const without = await gatewayWith(t, { _format_version: '3.0', services: [{ name: 's', url: backend.url, routes: [{ paths: ['/'] }] }] });
  assert.doesNotMatch(await metricsOf(without.admin), /^kong_/m);
});
