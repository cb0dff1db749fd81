/** Upstream passive health checks (Kong's circuit breaker): targets marked unhealthy by the traffic they answer, as Kong counts it. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { echoBackend, errorsOf, freePort, gatewayWith } from './helpers.ts';

async function healthOf(admin: string): Promise<Record<string, string>> {
  const res = await request(`${admin}/upstreams/pool/health`);
  const { data } = (await res.body.json()) as { data: { target: string; health: string }[] };
  return Object.fromEntries(data.map((t) => [t.target, t.health]));
}

test('healthchecks.passive: http_failures in a row and failed connections mark a target unhealthy; it gets no traffic; none left is 503', async (t) => {
  const good = await echoBackend(t);
  const failing = await echoBackend(t, (_req, res) => res.writeHead(500, { 'content-type': 'text/plain' }).end('broken'));
  const hostOf = (url: string) => new URL(url).host;
  const closed = `127.0.0.1:${await freePort()}`;
  const gw = await gatewayWith(t, {
    _format_version: '3.0',
    upstreams: [
      {
        name: 'pool',
        healthchecks: { passive: { unhealthy: { http_failures: 2, tcp_failures: 1, http_statuses: [500] }, healthy: { successes: 1 } } },
        targets: [{ target: hostOf(good.url) }, { target: hostOf(failing.url) }, { target: closed }],
      },
    ],
    services: [{ name: 's', host: 'pool', protocol: 'http', retries: 2, routes: [{ paths: ['/'] }] }],
  });
  const [goodTarget, failingTarget] = [hostOf(good.url), hostOf(failing.url)];
  assert.deepEqual(await healthOf(gw.admin), { [goodTarget]: 'HEALTHY', [failingTarget]: 'HEALTHY', [closed]: 'HEALTHY' });
  const statuses: number[] = [];
  for (let i = 0; i < 9; i++) statuses.push(await request(`${gw.proxy}/x${i}`).then((r) => (r.body.dump(), r.statusCode)));
  // The failing target answered 500 twice before it was taken out; the closed one failed once (that request went on to the next target).
  assert.deepEqual(
    statuses.filter((s) => s === 500),
    [500, 500],
  );
  assert.deepEqual(await healthOf(gw.admin), { [goodTarget]: 'HEALTHY', [failingTarget]: 'UNHEALTHY', [closed]: 'UNHEALTHY' });
  const seenBefore = failing.seen.length;
  for (let i = 0; i < 4; i++) assert.equal(await request(`${gw.proxy}/after${i}`).then((r) => (r.body.dump(), r.statusCode)), 200);
  assert.equal(failing.seen.length, seenBefore);
  assert.equal(good.seen.length, 7 + 4);
});

test('healthchecks.passive: with every target unhealthy the balancer has no peer (503); counters of 0 are HEALTHCHECKS_OFF; active intervals are refused', async (t) => {
  const failing = await echoBackend(t, (_req, res) => res.writeHead(503).end());
  const target = new URL(failing.url).host;
  const gw = await gatewayWith(t, {
    _format_version: '3.0',
    upstreams: [{ name: 'pool', healthchecks: { passive: { unhealthy: { http_failures: 1 } } }, targets: [{ target }] }],
    services: [{ name: 's', host: 'pool', protocol: 'http', routes: [{ paths: ['/'] }] }],
  });
  assert.equal((await request(`${gw.proxy}/`)).statusCode, 503);
  const none = await request(`${gw.proxy}/`);
  assert.deepEqual([none.statusCode, ((await none.body.json()) as { message: string }).message], [503, 'failure to get a peer from the ring-balancer']);
  assert.equal(failing.seen.length, 1);
  assert.deepEqual(await healthOf(gw.admin), { [target]: 'UNHEALTHY' });

  const off = await gatewayWith(t, {
    _format_version: '3.0',
    upstreams: [{ name: 'pool', targets: [{ target }] }],
    services: [{ name: 's', host: 'pool', protocol: 'http', routes: [{ paths: ['/'] }] }],
  });
  assert.deepEqual(await healthOf(off.admin), { [target]: 'HEALTHCHECKS_OFF' });
  assert.deepEqual(
    errorsOf({
      _format_version: '3.0',
      upstreams: [{ name: 'u', healthchecks: { active: { healthy: { interval: 5 } }, passive: { unhealthy: { timeouts: 300 } } } }],
    }),
    [
      "upstreams[0].healthchecks.active.healthy.interval: not supported by offcloud's gateway (active health checks); only 0 (off) is accepted",
      'upstreams[0].healthchecks.passive.unhealthy.timeouts: value should be between 0 and 255',
    ],
  );
});
