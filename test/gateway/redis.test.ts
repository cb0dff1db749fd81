/** rate-limiting with `policy: redis`: counters shared by several gateways, and a Redis that goes away. */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { pino } from 'pino';
import { request } from 'undici';
import { awayFromWindowEdge, echoBackend, gatewayWith, startRedis } from './helpers.ts';

const HOUR = 3_600_000;

function doc(url: string, redisPort: number, limit: Record<string, unknown>) {
  return {
    _format_version: '3.0',
    services: [{ name: 'svc', url, routes: [{ name: 'r', paths: ['/'] }] }],
    consumers: [{ username: 'alice', keyauth_credentials: [{ key: 'alice-key' }] }],
    plugins: [
      { name: 'key-auth' },
      { name: 'rate-limiting', config: { policy: 'redis', redis: { host: '127.0.0.1', port: redisPort, timeout: 2000 }, ...limit } },
    ],
  };
}

async function status(url: string): Promise<{ status: number; headers: Record<string, unknown> }> {
  const res = await request(url);
  await res.body.dump();
  return { status: res.statusCode, headers: res.headers };
}

test('two gateways sharing Redis let exactly the limit through out of 50 concurrent requests', async (t) => {
  const redis = await startRedis(t);
  const backend = await echoBackend(t);
  const config = doc(backend.url, redis.port, { hour: 10 });
  const [a, b] = await Promise.all([gatewayWith(t, config), gatewayWith(t, config)]);
  await awayFromWindowEdge(HOUR, 10_000);
  const results = await Promise.all(Array.from({ length: 50 }, (_, i) => status(`${(i % 2 ? a : b).proxy}/?apikey=alice-key`)));
  assert.equal(results.filter((r) => r.status === 200).length, 10);
  assert.equal(results.filter((r) => r.status === 429).length, 40);
  assert.equal(backend.seen.length, 10);
  const refused = results.find((r) => r.status === 429)!;
  assert.equal(refused.headers['x-ratelimit-remaining-hour'], '0');
  assert.ok(Number(refused.headers['retry-after']) >= 1);
});

test('Redis down: fault_tolerant passes requests and logs the failure once; fault_tolerant false answers 500', async (t) => {
  const redis = await startRedis(t);
  const backend = await echoBackend(t);
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const logger = pino({ level: 'error' }, sink);
  const tolerant = await gatewayWith(t, doc(backend.url, redis.port, { hour: 100 }), { logger });
  const strict = await gatewayWith(t, doc(backend.url, redis.port, { hour: 100, fault_tolerant: false }));
  const before = await status(`${tolerant.proxy}/?apikey=alice-key`);
  assert.equal(before.status, 200);
  assert.equal(before.headers['x-ratelimit-limit-hour'], '100');

  await redis.stop();
  for (let i = 0; i < 3; i++) {
    const during = await status(`${tolerant.proxy}/?apikey=alice-key`);
    assert.equal(during.status, 200);
    assert.equal(during.headers['x-ratelimit-limit-hour'], undefined, 'no counter, no headers');
  }
  assert.equal(lines.filter((l) => l.includes('failed to reach Redis')).length, 1);
  const refused = await request(`${strict.proxy}/?apikey=alice-key`);
  assert.equal(refused.statusCode, 500);
  assert.equal(((await refused.body.json()) as { message: string }).message, 'An unexpected error occurred');
});
