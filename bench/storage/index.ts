/**
 * Storage, against two baselines in one run: SDK upload/download throughput
 * through offcloud against fs on the same bytes (ratio), List Containers latency
 * with 10,000 containers, uploads and restart as a container fills to 10,000
 * blobs (blob-count.ts), and every row of the emulator comparison against
 * Azurite from its npm package (azurite.ts).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startChildServers } from '../common/child.ts';
import { result, type BenchContext, type BenchResult } from '../common/result.ts';
import { measureAgainstAzurite } from './azurite.ts';
import { measureBlobCounts } from './blob-count.ts';

interface ServerInfo {
  blobEndpoint: string;
  caCertPath: string;
  imdsUrl: string;
}

interface ClientReport {
  results: Record<string, { oursMBs: number; fsMBs: number }>;
  list: { containers: number; p50ms: number; minms: number };
}

export async function run(context: BenchContext): Promise<BenchResult[]> {
  const throughput = await measureThroughput();
  for (const figure of throughput) context.report(figure);
  const againstAzurite = await measureAgainstAzurite(context);
  return [...throughput, ...againstAzurite, ...(await measureBlobCounts(context))];
}

async function measureThroughput(): Promise<BenchResult[]> {
  const servers = await startChildServers<ServerInfo>(new URL('./servers.ts', import.meta.url));
  try {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', new URL('./client.ts', import.meta.url).pathname], {
      env: {
        ...process.env,
        NODE_EXTRA_CA_CERTS: servers.info.caCertPath,
        AZURE_POD_IDENTITY_AUTHORITY_HOST: servers.info.imdsUrl,
        BLOB_ENDPOINT: servers.info.blobEndpoint,
      },
      maxBuffer: 1024 * 1024,
      timeout: 600_000,
    });
    const report = JSON.parse(stdout.trim().split('\n').pop()!) as ClientReport;
    return [
      ...Object.entries(report.results).map(([name, r]) =>
        result({
          name: `storage ${name} (SDK, bearer token)`,
          unit: 'MB/s',
          ours: r.oursMBs,
          baseline: 'fs on the same bytes',
          baselineValue: r.fsMBs,
          better: 'higher',
        }),
      ),
      result({
        name: `storage List Containers, ${report.list.containers} containers (p50 of 5)`,
        unit: 'ms',
        ours: report.list.p50ms,
        baseline: 'fastest of the 5',
        baselineValue: report.list.minms,
        better: 'lower',
      }),
    ];
  } finally {
    await servers.stop();
  }
}
