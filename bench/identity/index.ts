/**
 * Client-credentials tokens per second over HTTPS keep-alive, against the
 * raw RS256 signing rate of the same key with jose in the same run (the
 * floor of what issuing costs), plus p50/p99 latency and the CPU time per
 * token (the server's process, its signing threads included) beside the CPU
 * time per signature; rounds alternate so drift on a shared machine hits both.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SignJWT } from 'jose';
import { Agent, request } from 'undici';
import { openSigningKeys } from '../../src/identity/keys.ts';
import { cpuWithEndedChildren } from '../common/cpu.ts';
import { alternate, median } from '../common/load.ts';
import { sized } from '../common/quick.ts';
import { result, type BenchResult } from '../common/result.ts';

const SECONDS = sized(4, 1);
const ROUNDS = sized(3, 1);
const CONNECTIONS = 10;

interface ServerInfo {
  authorityHost: string;
  tenantId: string;
  caCertPath: string;
  clientId: string;
  clientSecret: string;
}

interface Round {
  perSecond: number;
  /** CPU time of the process that signs (the server, or this one for the raw rate), per token. */
  cpuMsPerToken: number;
  p50ms: number;
  p99ms: number;
  errors: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
}

/** CONNECTIONS clients, each POSTing token requests back to back over one kept-alive TLS connection. */
async function tokenRound(info: ServerInfo, serverPid: number, dispatcher: Agent, body: string): Promise<Round> {
  const cpuBefore = cpuWithEndedChildren(serverPid);
  const url = `${info.authorityHost}/${info.tenantId}/oauth2/v2.0/token`;
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < end) {
        const started = performance.now();
        const answer = await request(url, { method: 'POST', dispatcher, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
        await answer.body.arrayBuffer();
        if (answer.statusCode !== 200) errors++;
        latencies.push(performance.now() - started);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  const cpuMsPerToken = (cpuWithEndedChildren(serverPid) - cpuBefore) / latencies.length;
  return { perSecond: latencies.length / SECONDS, cpuMsPerToken, p50ms: percentile(latencies, 50), p99ms: percentile(latencies, 99), errors };
}

/** The same key and a claim set of the same size, signed back to back on one thread. */
async function signingRound(dataDir: string): Promise<Round> {
  const { active } = await openSigningKeys(dataDir).current();
  const now = Math.floor(Date.now() / 1000);
  const claims = {
    aud: '00000000-0000-0000-0000-000000000000',
    iss: 'https://login.microsoftonline.com/x/v2.0',
    iat: now,
    nbf: now,
    exp: now + 3599,
    azp: 'y',
    azpacr: '1',
    idtyp: 'app',
    oid: 'z',
    roles: ['Demo.Read.All'],
    sub: 'z',
    tid: 'x',
    uti: 'u',
    ver: '2.0',
  };
  const latencies: number[] = [];
  const cpuBefore = process.cpuUsage();
  const end = performance.now() + SECONDS * 1000;
  while (performance.now() < end) {
    const started = performance.now();
    await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: active.kid }).sign(active.privateKey);
    latencies.push(performance.now() - started);
  }
  latencies.sort((a, b) => a - b);
  const cpu = process.cpuUsage(cpuBefore);
  const cpuMsPerToken = (cpu.user + cpu.system) / 1000 / latencies.length;
  return { perSecond: latencies.length / SECONDS, cpuMsPerToken, p50ms: percentile(latencies, 50), p99ms: percentile(latencies, 99), errors: 0 };
}

export async function run(): Promise<BenchResult[]> {
  const dataDir = await mkdtemp(join(tmpdir(), 'offcloud-bench-identity-'));
  const server = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./server.ts', import.meta.url)), dataDir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const info = await new Promise<ServerInfo>((resolve, reject) => {
      let out = '';
      server.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]!) as ServerInfo);
      });
      server.on('close', (code) => reject(new Error(`bench server exited ${code}`)));
    });
    const dispatcher = new Agent({ connect: { ca: await readFile(info.caCertPath, 'utf8') }, connections: CONNECTIONS, keepAliveTimeout: 30_000 });
    const body = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: info.clientId,
      client_secret: info.clientSecret,
      scope: 'api://offcloud-demo-api/.default',
    }).toString();
    await tokenRound(info, server.pid!, dispatcher, body); // warm-up: TLS sessions, JIT
    const rounds = await alternate(
      ROUNDS,
      () => tokenRound(info, server.pid!, dispatcher, body),
      () => signingRound(dataDir),
    );
    await dispatcher.close();
    const ours = median(rounds.a.map((r) => r.perSecond));
    const baseline = median(rounds.b.map((r) => r.perSecond));
    const cpuMsPerToken = median(rounds.a.map((r) => r.cpuMsPerToken));
    const cpuMsPerSignature = median(rounds.b.map((r) => r.cpuMsPerToken));
    const loadAverage = loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
    return [
      result({
        name: `identity client-credentials tokens/s over HTTPS keep-alive (CPU per token ${cpuMsPerToken.toFixed(2)} ms, per raw signature ${cpuMsPerSignature.toFixed(2)} ms; load average ${loadAverage})`,
        unit: 'tokens/s',
        ours,
        baseline: 'raw RS256 signing of the same key with jose, one thread',
        baselineValue: baseline,
        better: 'higher',
        details: {
          p50ms: median(rounds.a.map((r) => r.p50ms)),
          p99ms: median(rounds.a.map((r) => r.p99ms)),
          signP50ms: median(rounds.b.map((r) => r.p50ms)),
          cpuMsPerToken,
          cpuMsPerSignature,
          loadAverage,
          errors: rounds.a.reduce((sum, r) => sum + r.errors, 0),
          connections: CONNECTIONS,
          secondsPerRound: SECONDS,
          rounds,
        },
      }),
    ];
  } finally {
    server.kill('SIGTERM');
    await new Promise((resolve) => server.once('close', resolve));
    await rm(dataDir, { recursive: true, force: true });
  }
}
