/**
 * Calculator requests/s against a bare node:http server answering the same
 * route the same way, under the same autocannon load, alternating rounds.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startCalculator } from '../../src/calculator/server.ts';
import { alternate, median, requestsPerSecond } from '../common/load.ts';
import { result, type BenchResult } from '../common/result.ts';

export async function run(): Promise<BenchResult[]> {
  const ours = await startCalculator({ port: 0, logLevel: 'silent' });
  const baseline = createServer((req, res) => {
    const match = /^\/add\/([+-]?\d+)\/([+-]?\d+)$/.exec(req.url ?? '');
    if (!match) {
      res.writeHead(400).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end((BigInt(match[1]!) + BigInt(match[2]!)).toString());
  });
  await new Promise<void>((resolve) => baseline.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(baseline.address() as AddressInfo).port}`;
  const ourUrl = ours.urls[0]!.url.replace('/add/{a}/{b}', '');
  const path = '/add/123456789012345678901234567890/-987654321';
  try {
    const rounds = await alternate(
      3,
      () => requestsPerSecond({ url: ourUrl + path, seconds: 4 }),
      () => requestsPerSecond({ url: baseUrl + path, seconds: 4 }),
    );
    const oursRps = median(rounds.a.map((r) => r.rps));
    const baseRps = median(rounds.b.map((r) => r.rps));
    return [
      result({
        name: 'calculator GET /add requests/s',
        unit: 'req/s',
        ours: oursRps,
        baseline: 'bare node:http',
        baselineValue: baseRps,
        better: 'higher',
        details: { rounds, connections: 10, secondsPerRound: 4 },
      }),
    ];
  } finally {
    await ours.close();
    await new Promise((resolve) => baseline.close(resolve));
  }
}
