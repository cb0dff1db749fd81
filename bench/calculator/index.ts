/**
 * Calculator requests/s against a bare node:http server answering the same
 * route, both in one child process, under the same autocannon load from this
 * process, in alternating rounds.
 */
import { startChildServers } from '../common/child.ts';
import { alternate, median, requestsPerSecond } from '../common/load.ts';
import { sized } from '../common/quick.ts';
import { result, type BenchResult } from '../common/result.ts';

const ROUNDS = sized(5, 1);
const SECONDS = sized(3, 1);

export async function run(): Promise<BenchResult[]> {
  const servers = await startChildServers<{ ours: string; baseline: string }>(new URL('./servers.ts', import.meta.url));
  const path = '/add/123456789012345678901234567890/-987654321';
  try {
    const rounds = await alternate(
      ROUNDS,
      () => requestsPerSecond({ url: servers.info.ours + path, seconds: SECONDS }),
      () => requestsPerSecond({ url: servers.info.baseline + path, seconds: SECONDS }),
    );
    return [
      result({
        name: 'calculator GET /add requests/s',
        unit: 'req/s',
        ours: median(rounds.a.map((r) => r.rps)),
        baseline: 'bare node:http',
        baselineValue: median(rounds.b.map((r) => r.rps)),
        better: 'higher',
        details: { rounds, connections: 10, secondsPerRound: SECONDS },
      }),
    ];
  } finally {
    await servers.stop();
  }
}
