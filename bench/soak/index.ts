/**
 * Soak (long mixed load; memory, descriptors and answers must stay flat):
 * `npm run bench -- soak [--duration <s>]` (default
 * 300 s; the run's --timeout must exceed it). One `offcloud up`, and for each
 * component a steady client calling one of its real, cheap operations over
 * keep-alive; every minute it prints, per component, requests, errors
 * (network failures and statuses other than the expected one) and p99, and
 * the process's RSS; at the end RSS at start and end. Not part of npm test.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { BlobSASPermissions, BlobServiceClient, StorageSharedKeyCredential } from '@azure/storage-blob';
import { DEVELOPMENT_ACCOUNT, DEVELOPMENT_KEY } from '../../src/storage/persistence/accounts.ts';
import { startUp, terminate, type Up } from '../../test/resilience/harness.ts';
import { cpuWithEndedChildren } from '../common/cpu.ts';
import { sized } from '../common/quick.ts';
import { result, type BenchContext, type BenchResult } from '../common/result.ts';

const MINUTE_MS = 60_000;

interface Operation {
  component: string;
  /** The request, from up's listeners. */
  call(up: Up, prepared: Prepared): { url: string; method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string };
  status: number;
}

const origin = (up: Up, component: string, label?: RegExp) => {
  const url = up.listener(component, label).url;
  return `${url.protocol}//${url.host}`;
};

/** What the operations need that is made once before the load: a blob to read, its SAS URL. */
interface Prepared {
  blobUrl: string;
}

/** A container and a blob in the development account over storage's HTTP port, read back with a SAS. */
async function prepareStorage(up: Up): Promise<Prepared> {
  const endpoint = up.listener('storage', /HTTP:/).url;
  const credential = new StorageSharedKeyCredential(DEVELOPMENT_ACCOUNT, DEVELOPMENT_KEY);
  const service = new BlobServiceClient(`${endpoint.protocol}//${endpoint.host}/${DEVELOPMENT_ACCOUNT}`, credential);
  const container = service.getContainerClient('soak');
  await container.createIfNotExists();
  const blob = container.getBlockBlobClient('soak.txt');
  await blob.upload('soak', 4);
  const blobUrl = await blob.generateSasUrl({ permissions: BlobSASPermissions.parse('r'), expiresOn: new Date(Date.now() + 3_600_000) });
  return { blobUrl };
}

/** One cheap real operation per component; /health where the real ones need credentials the table does not print whole (hub, billing, face, scoring). */
const OPERATIONS: Operation[] = [
  { component: 'calculator', call: (up) => ({ url: `${origin(up, 'calculator')}/add/2/3` }), status: 200 },
  { component: 'users', call: (up) => ({ url: `${origin(up, 'users')}/api/getusers` }), status: 200 },
  { component: 'gateway', call: (up) => ({ url: `${origin(up, 'gateway', /^proxy$/)}/calc/v1/add/2/3` }), status: 200 },
  {
    component: 'identity',
    call: (up) => ({
      url: `${origin(up, 'identity', /IMDS/)}/metadata/identity/oauth2/token?api-version=2018-02-01&resource=${encodeURIComponent('https://storage.azure.com')}`,
      headers: { Metadata: 'true' },
    }),
    status: 200,
  },
  { component: 'storage', call: (_up, prepared) => ({ url: prepared.blobUrl }), status: 200 },
  { component: 'devdata', call: (up) => ({ url: `${origin(up, 'devdata')}/data/soak-device` }), status: 200 },
  { component: 'scripts', call: (up) => ({ url: `${origin(up, 'scripts')}/hello?name=soak` }), status: 200 },
  { component: 'hub', call: (up) => ({ url: `${origin(up, 'hub', /REST/)}/health` }), status: 200 },
  { component: 'billing', call: (up) => ({ url: `${origin(up, 'billing')}/health` }), status: 200 },
  {
    component: 'sentiment',
    call: (up) => ({
      url: `${origin(up, 'sentiment')}/text/analytics/v2.0/sentiment`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ documents: [{ id: '1', language: 'en', text: 'A fine and steady day.' }] }),
    }),
    status: 200,
  },
  { component: 'face', call: (up) => ({ url: `${origin(up, 'face')}/status` }), status: 200 },
  { component: 'scoring', call: (up) => ({ url: `${origin(up, 'scoring')}/health` }), status: 200 },
  { component: 'scoring-frontend', call: (up) => ({ url: `${origin(up, 'scoring-frontend')}/health` }), status: 200 },
];

interface Minute {
  requests: number;
  errors: number;
  latencies: number[];
}

function p99(values: number[]): number {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]!;
}

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024);
}

export async function run({ report, signal }: BenchContext): Promise<BenchResult[]> {
  const at = process.argv.indexOf('--duration');
  const durationMs = (at >= 0 ? Number(process.argv[at + 1]) : sized(300, 5)) * 1000;
  const dataDir = await mkdtemp(join(tmpdir(), 'offcloud-soak-'));
  const up = await startUp(dataDir);
  const pid = up.process.pid!;
  const agent = new Agent({ connect: { ca: await readFile(join(dataDir, 'ca', 'ca.crt'), 'utf8') } });
  try {
    const prepared = await prepareStorage(up);
    const rssStart = await rssMb(pid);
    const cpuStart = cpuWithEndedChildren(pid);
    const started = Date.now();
    const minutes = new Map<string, Minute[]>(OPERATIONS.map((o) => [o.component, []]));
    /** The minute a request was sent in. */
    const bucket = (component: string, sentAt: number) => {
      const index = Math.floor((sentAt - started) / MINUTE_MS);
      const list = minutes.get(component)!;
      while (list.length <= index) list.push({ requests: 0, errors: 0, latencies: [] });
      return list[index]!;
    };
    const stopAt = started + durationMs;
    const client = async (operation: Operation) => {
      const call = operation.call(up, prepared);
      while (Date.now() < stopAt && !signal.aborted) {
        const sentAt = Date.now();
        const sent = performance.now();
        let ok = false;
        try {
          const answer = await request(call.url, { method: call.method ?? 'GET', headers: call.headers, body: call.body, dispatcher: agent });
          await answer.body.dump();
          ok = answer.statusCode === operation.status;
        } catch {
          ok = false;
        }
        const minute = bucket(operation.component, sentAt);
        minute.requests++;
        if (!ok) minute.errors++;
        minute.latencies.push(performance.now() - sent);
      }
    };
    let printed = 0;
    const ticker = setInterval(() => {
      void rssMb(pid).then((rss) => {
        const line = OPERATIONS.map((o) => {
          const m = minutes.get(o.component)![printed];
          return m ? `${o.component} ${m.requests} req ${m.errors} err p99 ${p99(m.latencies).toFixed(0)} ms` : `${o.component} -`;
        });
        console.log(`soak minute ${printed + 1}: RSS ${rss} MB, load ${loadavg()[0]!.toFixed(1)}; ${line.join('; ')}`);
        printed++;
      });
    }, MINUTE_MS);
    await Promise.all(OPERATIONS.map(client));
    clearInterval(ticker);
    const rssEnd = await rssMb(pid);
    const total = [...minutes.values()].flat();
    const requests = total.reduce((sum, m) => sum + m.requests, 0);
    const figure = result({
      name: `soak: offcloud up under mixed load for ${durationMs / 1000} s, RSS at the end vs the start`,
      unit: 'MB',
      ours: rssEnd,
      baseline: 'RSS at the start',
      baselineValue: rssStart,
      better: 'lower',
      details: {
        requests,
        errors: total.reduce((sum, m) => sum + m.errors, 0),
        cpuMsPerRequest: (cpuWithEndedChildren(pid) - cpuStart) / requests,
        perComponentPerMinute: Object.fromEntries(
          [...minutes].map(([component, list]) => [
            component,
            list.map((m) => ({ requests: m.requests, errors: m.errors, p99ms: Math.round(p99(m.latencies)) })),
          ]),
        ),
        loadAverage: loadavg(),
      },
    });
    report(figure);
    return [figure];
  } finally {
    await agent.close();
    if ((await terminate(up.process, 10_000)) === 'late') up.process.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  }
}
