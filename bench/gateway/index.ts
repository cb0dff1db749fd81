/**
 * The gateway against Debian's nginx as a plain reverse proxy, same backend,
 * same load generator (wrk), same run, every target warmed up first, then
 * alternating rounds:
 *   (a) the backend directly, (b) nginx → backend, (c) our gateway with no
 *   plugins, (d) our gateway with key-auth + rate-limiting (limit set high),
 *   (e) our gateway with cors + jwt + rate-limiting, (r) our gateway with
 *   1, 1000 and 5000 services of one prefix route each, requests going to
 *   the last one.
 * Prints requests/s, p50/p99 and CPU time per request (user and system) for
 * each, then the ratios (c)/(b), (d)/(b), (e)/(b) with both sides' CPU per
 * request, each route count's rate against the one-route rate, and the time
 * a 5000-route file takes to load.
 * A round that fails is reported and skipped; the bench stops at the
 * runner's timeout.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { loadavg } from 'node:os';
import { median } from '../common/load.ts';
import { sized } from '../common/quick.ts';
import { result, type BenchContext, type BenchResult } from '../common/result.ts';
import { performance } from 'node:perf_hooks';
import { SignJWT } from 'jose';
import { pino } from 'pino';
import { CounterStores } from '../../src/gateway/plugins/rate-limiting/policies.ts';
import { pluginEnvironment } from '../../src/gateway/plugins/types.ts';
import { compileConfig } from '../../src/gateway/proxy/compile.ts';
import { debianProgram } from '../../test/helpers/index.ts';
import { freePort } from '../../test/gateway/helpers.ts';

const execFileAsync = promisify(execFile);
const silentLogger = pino({ level: 'silent' });
const CONNECTIONS = 32;
const SECONDS = sized(5, 1);
const ROUNDS = sized(3, 1);
/** Seconds of unmeasured load per target before the rounds: Node's JIT compiles the hot path in the first thousands of requests, nginx has nothing to warm. */
const WARM_UP_SECONDS = sized(2, 0);
const KEY = 'bench-key';
/** The gateway in one process, and with one worker process per core of this 2-core machine (`--workers 2`); GATEWAY_BENCH_WORKERS=1 keeps one. */
const WORKERS = process.env.GATEWAY_BENCH_WORKERS ? process.env.GATEWAY_BENCH_WORKERS.split(',').map(Number) : sized([1, 2], [1]);
/**
 * GATEWAY_BENCH_TARGETS=b,c,d measures only the targets of those letters (the
 * others are not started): for re-taking a few ratios in a short sitting.
 */
const TARGETS = process.env.GATEWAY_BENCH_TARGETS?.split(',');
const wanted = (letter: string) => !TARGETS || TARGETS.includes(letter);

/**
 * The reference's "floor" (part D): a naive node:http pipe with a keep-alive
 * agent, no routing or headers, in its own process. It shows what any Node
 * proxy costs on this machine.
 */
const NAIVE_PROXY = `
const http = require('node:http');
const [port, backendPort] = process.argv.slice(1).map(Number);
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
http.createServer((req, res) => {
  const up = http.request({ host: '127.0.0.1', port: backendPort, path: '/api/getusers', method: req.method, headers: req.headers, agent }, (answer) => {
    res.writeHead(answer.statusCode, answer.headers);
    answer.pipe(res);
  });
  req.pipe(up);
}).listen(port, '127.0.0.1', () => process.stdout.write('ready\\n'));
`;

/**
 * Node's own floor: a TCP pipe that gives each client connection its own
 * upstream connection and passes bytes unparsed. No HTTP proxy can cost
 * less in Node: it is only the socket reads and writes.
 */
const TCP_PIPE = `
const net = require('node:net');
const [port, backendPort] = process.argv.slice(1).map(Number);
net.createServer((client) => {
  const upstream = net.connect(backendPort, '127.0.0.1');
  for (const socket of [client, upstream]) {
    socket.setNoDelay(true);
    socket.on('error', () => {});
  }
  client.on('data', (chunk) => upstream.write(chunk));
  upstream.on('data', (chunk) => client.write(chunk));
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
}).listen(port, '127.0.0.1', () => process.stdout.write('ready\\n'));
`;

/** The reference's backend (part D): a bare node:http server answering 47 bytes of JSON, in its own process. */
const BACKEND = `
const body = JSON.stringify({ users: [{ id: 1, name: 'Ada Lovelace' }] }).padEnd(47);
require('node:http').createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}).listen(Number(process.argv[1]), '127.0.0.1', () => process.stdout.write('ready\\n'));
`;

interface Figures {
  rps: number;
  p50ms: number;
  p99ms: number;
  /** CPU time the proxy process(es) spent per request: steadier than req/s on a shared machine. */
  cpuUsPerRequest: number;
  /** Of which in user space (the proxy's own code) and in the kernel (the socket calls). */
  userUsPerRequest: number;
  systemUsPerRequest: number;
}

/** CPU time used so far by a process and its children, from /proc (clock ticks of 10 ms). */
interface CpuTime {
  userUs: number;
  systemUs: number;
}

function processCpu(pid: number): CpuTime {
  const ticks = (p: number): [number, number] => {
    const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    let user = Number(fields[11]);
    let system = Number(fields[12]);
    const children = readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim();
    for (const child of children ? children.split(' ') : []) {
      const [u, s] = ticks(Number(child));
      user += u;
      system += s;
    }
    return [user, system];
  };
  const [user, system] = ticks(pid);
  return { userUs: user * 10_000, systemUs: system * 10_000 };
}

function milliseconds(text: string): number {
  const [, value, unit] = /^([\d.]+)(us|ms|s)$/.exec(text.trim()) ?? [];
  const n = Number(value);
  return unit === 'us' ? n / 1000 : unit === 's' ? n * 1000 : n;
}

async function wrk(url: string, cpu: () => CpuTime, headers: string[], signal: AbortSignal, seconds = SECONDS): Promise<Figures> {
  const program = debianProgram('wrk', '/usr/bin/wrk');
  const before = cpu();
  const { stdout } = await execFileAsync(program, ['-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--latency', ...headers.flatMap((h) => ['-H', h]), url], {
    signal,
    timeout: (seconds + 30) * 1000,
  });
  const after = cpu();
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(stdout);
  if (non2xx) throw new Error(`wrk saw ${non2xx[1]} error answers from ${url}`);
  const requests = Number(/(\d+) requests in/.exec(stdout)?.[1]);
  const userUsPerRequest = (after.userUs - before.userUs) / requests;
  const systemUsPerRequest = (after.systemUs - before.systemUs) / requests;
  return {
    cpuUsPerRequest: userUsPerRequest + systemUsPerRequest,
    userUsPerRequest,
    systemUsPerRequest,
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]),
    p50ms: milliseconds(/\s50%\s+(\S+)/.exec(stdout)?.[1] ?? 'NaNms'),
    p99ms: milliseconds(/\s99%\s+(\S+)/.exec(stdout)?.[1] ?? 'NaNms'),
  };
}

async function startProcess(program: string, args: string[], readyWhen: (output: string) => boolean): Promise<ChildProcess> {
  const child = spawn(program, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (readyWhen(output)) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${program} exited (${code}): ${output}`)));
  });
  return child;
}

/** Waits until `url` answers; a process started through tsx on a busy machine may take many seconds. */
async function waitForPort(url: string, seconds = 5): Promise<void> {
  for (let i = 0; i < seconds * 20; i++) {
    try {
      await fetch(url);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  throw new Error(`${url} did not come up`);
}

function nginxConfig(dir: string, port: number, backendPort: number): string {
  return `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream be { server 127.0.0.1:${backendPort}; keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    location = /users {
      limit_except GET { deny all; }
      proxy_pass http://be/api/getusers;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_connect_timeout 10s; proxy_read_timeout 10s; proxy_send_timeout 10s;
    }
  }
}
`;
}

/** Route counts of the (r) rows; requests go to the last route (`/api/v1/service<N>/items`). */
const ROUTE_COUNTS = [1, 1000, 5000];
const JWT_SECRET = 'bench-jwt-secret';

/** N services with one prefix route each, as a microservice project lays them out. */
function manyRoutesDoc(backendPort: number, count: number): Record<string, unknown> {
  return {
    _format_version: '3.0',
    services: Array.from({ length: count }, (_, i) => ({
      name: `service${i + 1}`,
      url: `http://127.0.0.1:${backendPort}/api/getusers`,
      routes: [{ name: `service${i + 1}`, paths: [`/api/v1/service${i + 1}/items`] }],
    })),
  };
}

/** cors + jwt + rate-limiting on the users route. */
function corsJwtDoc(backendPort: number): Record<string, unknown> {
  const doc = gatewayDoc(backendPort, false);
  (doc.services as Record<string, unknown>[])[0]!.plugins = [
    { name: 'cors', config: { origins: ['http://app.bench.test'], credentials: true } },
    { name: 'jwt' },
    { name: 'rate-limiting', config: { second: 1e9, policy: 'local' } },
  ];
  doc.consumers = [{ username: 'bench', jwt_secrets: [{ key: 'bench-iss', secret: JWT_SECRET }] }];
  return doc;
}

function gatewayDoc(backendPort: number, plugins: boolean): Record<string, unknown> {
  return {
    _format_version: '3.0',
    services: [
      {
        name: 'users',
        url: `http://127.0.0.1:${backendPort}/api/getusers`,
        connect_timeout: 10000,
        read_timeout: 10000,
        write_timeout: 10000,
        retries: 10,
        routes: [{ name: 'users', paths: ['/users'], methods: ['GET'] }],
        plugins: plugins ? [{ name: 'key-auth' }, { name: 'rate-limiting', config: { second: 1e9, policy: 'local' } }] : [],
      },
    ],
    consumers: [{ username: 'bench', keyauth_credentials: [{ key: KEY }] }],
  };
}

export async function run({ report, signal }: BenchContext): Promise<BenchResult[]> {
  console.log(
    `gateway bench: load average at the start ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const dir = await mkdtemp(join(tmpdir(), 'offcloud-bench-gateway-'));
  const children: ChildProcess[] = [];
  try {
    const backendPort = await freePort();
    const backend = await startProcess(process.execPath, ['-e', BACKEND, String(backendPort)], (o) => o.includes('ready'));
    children.push(backend);
    const nginxPort = await freePort();
    await writeFile(join(dir, 'nginx.conf'), nginxConfig(dir, nginxPort, backendPort));
    const nginx = spawn(debianProgram('nginx-light', '/usr/sbin/nginx'), ['-c', join(dir, 'nginx.conf'), '-p', dir], { stdio: 'ignore' });
    children.push(nginx);
    await waitForPort(`http://127.0.0.1:${nginxPort}/users`);

    const targets: { name: string; url: string; cpu: () => CpuTime; headers?: string[] }[] = [
      { name: '(a) backend direct', url: `http://127.0.0.1:${backendPort}/api/getusers`, cpu: () => processCpu(backend.pid!) },
      { name: '(b) nginx → backend', url: `http://127.0.0.1:${nginxPort}/users`, cpu: () => processCpu(nginx.pid!) },
    ].filter((target) => wanted(target.name[1]!));
    /** A floor proxy in its own process (node with `args`, then its port and the backend's), measured as `name`. */
    const floor = async (letter: string, name: string, args: string[]) => {
      if (!wanted(letter)) return;
      const port = await freePort();
      const child = await startProcess(process.execPath, [...args, String(port), String(backendPort)], (o) => o.includes('ready'));
      children.push(child);
      targets.push({ name: `(${letter}) ${name}`, url: `http://127.0.0.1:${port}/users`, cpu: () => processCpu(child.pid!) });
    };
    await floor('n', 'naive node:http proxy → backend', ['-e', NAIVE_PROXY]);
    await floor('t', 'TCP pipe, bytes unparsed → backend', ['-e', TCP_PIPE]);
    await floor('m', 'minimal raw-socket Node pipe → backend', ['--import', 'tsx', fileURLToPath(new URL('minimal-pipe.ts', import.meta.url))]);
    // Each gateway runs in its own process, started by the CLI as a user starts it, so its CPU is read
    // from /proc like nginx's (with its worker processes); the bench process's own work is not counted.
    // OFFCLOUD_BENCH_CLI=label=path[,label=path…] adds other builds of the gateway to the same rounds
    // (1 process, both plugin settings): a compiled `dist/cli.js` or another checkout's `src/cli.ts`.
    const builds = [
      { label: '', cli: fileURLToPath(new URL('../../src/cli.ts', import.meta.url)), workers: WORKERS },
      ...(process.env.OFFCLOUD_BENCH_CLI ?? '')
        .split(',')
        .filter(Boolean)
        .map((entry) => ({ label: ` [${entry.slice(0, entry.indexOf('='))}]`, cli: entry.slice(entry.indexOf('=') + 1), workers: [1] })),
    ];
    /** Starts the gateway CLI on `doc` as a user starts it; its CPU is read from /proc with its worker processes. */
    // The ports are picked free and then given to the CLI, so another bench of `all` running beside
    // this one may take one in between: a start that ends with EADDRINUSE is tried again on others.
    const startGatewayProcess = async (cli: string, doc: Record<string, unknown>, workers: number, tag: string) => {
      const file = join(dir, `kong-${tag}-${workers}.json`);
      await writeFile(file, JSON.stringify(doc));
      const runCli = cli.endsWith('.ts') ? ['--import', 'tsx', cli] : [cli];
      for (let attempt = 1; ; attempt++) {
        const [port, httpsPort, adminPort] = [await freePort(), await freePort(), await freePort()];
        const flags = { port, 'https-port': httpsPort, 'admin-port': adminPort, 'log-level': 'silent', 'data-dir': dir, 'declarative-config': file, workers };
        const gw = spawn(process.execPath, [...runCli, 'gateway', ...Object.entries(flags).flatMap(([flag, value]) => [`--${flag}`, String(value)])], {
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        children.push(gw);
        let stderr = '';
        gw.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
        const exited = new Promise<never>((_, reject) =>
          gw.once('exit', (code) => reject(new Error(`the gateway exited (${code}) before its admin port answered: ${stderr}`))),
        );
        try {
          await Promise.race([waitForPort(`http://127.0.0.1:${adminPort}/status`, 90), exited]);
          exited.catch(() => {});
          return { base: `http://127.0.0.1:${port}`, cpu: () => processCpu(gw.pid!) };
        } catch (error) {
          exited.catch(() => {});
          gw.kill();
          if (attempt >= 3 || !/already in use|EADDRINUSE/.test(stderr)) throw error;
        }
      }
    };
    for (const build of builds) {
      for (const workers of build.workers) {
        for (const plugins of [false, true].filter((p) => wanted(p ? 'd' : 'c'))) {
          const gw = await startGatewayProcess(build.cli, gatewayDoc(backendPort, plugins), workers, String(plugins));
          targets.push({
            name: `${plugins ? '(d) gateway + key-auth + rate-limiting' : '(c) gateway, no plugins'}${build.label}, ${workers === 1 ? '1 process' : `${workers} workers`}`,
            url: `${gw.base}/users`,
            cpu: gw.cpu,
            headers: plugins ? [`apikey: ${KEY}`] : [],
          });
        }
      }
    }
    const ownCli = builds[0]!.cli;
    if (wanted('e')) {
      const corsJwt = await startGatewayProcess(ownCli, corsJwtDoc(backendPort), 1, 'cors-jwt');
      const token = await new SignJWT({ iss: 'bench-iss' }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode(JWT_SECRET));
      targets.push({
        name: '(e) gateway + cors + jwt + rate-limiting, 1 process',
        url: `${corsJwt.base}/users`,
        cpu: corsJwt.cpu,
        headers: [`Authorization: Bearer ${token}`, 'Origin: http://app.bench.test'],
      });
    }
    if (wanted('r')) {
      for (const count of ROUTE_COUNTS) {
        const gw = await startGatewayProcess(ownCli, manyRoutesDoc(backendPort, count), 1, `routes-${count}`);
        targets.push({ name: `(r) gateway, ${count} routes, 1 process`, url: `${gw.base}/api/v1/service${count}/items`, cpu: gw.cpu });
      }
      const loadStarted = performance.now();
      const loadCpu = process.cpuUsage();
      compileConfig(manyRoutesDoc(backendPort, 5000), pluginEnvironment(silentLogger, new CounterStores(silentLogger)));
      const loadMs = performance.now() - loadStarted;
      const { user, system } = process.cpuUsage(loadCpu);
      // The CPU time is the steadier figure on a shared machine: the wall time waits for the cores.
      console.log(`loading a 5000-route file (validate and compile, in this process): ${loadMs.toFixed(0)} ms, CPU ${((user + system) / 1000).toFixed(0)} ms`);
      report(
        result({
          name: 'gateway: loading a 5000-route declarative file',
          unit: 'ms',
          ours: loadMs,
          baseline: 'the 1 s limit',
          baselineValue: 1000,
          better: 'lower',
        }),
      );
    }

    for (const target of WARM_UP_SECONDS ? targets : []) {
      if (signal.aborted) break;
      await wrk(target.url, target.cpu, target.headers ?? [], signal, WARM_UP_SECONDS).catch((err: Error) =>
        console.error(`${target.name}, warm-up: ${err.message}`),
      );
    }
    const rounds = new Map<string, Figures[]>(targets.map((t) => [t.name, []]));
    for (let round = 0; round < ROUNDS && !signal.aborted; round++) {
      for (const target of targets) {
        if (signal.aborted) break;
        try {
          rounds.get(target.name)!.push(await wrk(target.url, target.cpu, target.headers ?? [], signal));
        } catch (err) {
          console.error(`${target.name}, round ${round + 1}: ${(err as Error).message}`);
        }
      }
    }
    const summary = summarize(rounds);
    for (const [name, s] of Object.entries(summary)) {
      console.log(
        `${name.padEnd(56)} ${s.rps.toFixed(0).padStart(7)} req/s   p50 ${s.p50ms.toFixed(2)} ms   p99 ${s.p99ms.toFixed(2)} ms   ` +
          `CPU ${s.cpuUsPerRequest.toFixed(1)} µs/request (user ${s.userUsPerRequest.toFixed(1)}, system ${s.systemUsPerRequest.toFixed(1)})`,
      );
    }
    return [...compareWithNginx(summary, report), ...compareRouteCounts(summary, report)];
  } finally {
    for (const child of children) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  }
}

/** Each (r) row's requests/s against the one-route rate (at 5000 routes it should stay at least 0.9). */
function compareRouteCounts(summary: Summary, report: BenchContext['report']): BenchResult[] {
  const one = summary[`(r) gateway, ${ROUTE_COUNTS[0]} routes, 1 process`];
  if (!one) return [];
  return ROUTE_COUNTS.slice(1).flatMap((count) => {
    const ours = summary[`(r) gateway, ${count} routes, 1 process`];
    if (!ours) return [];
    console.log(`${count} routes: ${(ours.rps / one.rps).toFixed(2)} of the one-route rate (${ours.rps.toFixed(0)} vs ${one.rps.toFixed(0)} req/s)`);
    const row = result({
      name: `gateway, ${count} routes vs 1 route, requests/s`,
      unit: 'req/s',
      ours: ours.rps,
      baseline: 'the same gateway with one route',
      baselineValue: one.rps,
      better: 'higher',
    });
    report(row);
    return [row];
  });
}

type Summary = Record<string, Omit<Figures, 'rps'> & { rps: number; rounds: Figures[] }>;

/** Medians over the rounds that succeeded, per target (a target with none is left out). */
function summarize(rounds: Map<string, Figures[]>): Summary {
  const summary: Summary = {};
  for (const [name, figures] of rounds) {
    if (figures.length === 0) continue;
    const of = (pick: (f: Figures) => number) => median(figures.map(pick));
    summary[name] = {
      rps: of((f) => f.rps),
      p50ms: of((f) => f.p50ms),
      p99ms: of((f) => f.p99ms),
      cpuUsPerRequest: of((f) => f.cpuUsPerRequest),
      userUsPerRequest: of((f) => f.userUsPerRequest),
      systemUsPerRequest: of((f) => f.systemUsPerRequest),
      rounds: figures,
    };
  }
  return summary;
}

/**
 * The ratios the gateway's targets are stated in: each gateway line, (c) and (d) (of every build that
 * ran), against nginx in requests/s and in CPU time per request, each
 * printed as soon as it is made.
 */
function compareWithNginx(summary: Summary, report: BenchContext['report']): BenchResult[] {
  const nginx = summary['(b) nginx → backend'];
  if (!nginx) throw new Error('no round of nginx succeeded: nothing to compare with');
  const details = { connections: CONNECTIONS, secondsPerRound: SECONDS, rounds: ROUNDS, load: 'wrk -t1', summary };
  const results: BenchResult[] = [];
  for (const [target, ours] of Object.entries(summary)) {
    // "(c) gateway, no plugins, 1 process" → "(c) no plugins, 1 process"; "(d) gateway + key-auth…" → "(d) key-auth…".
    const line = /^\([cde]\) gateway/.test(target) ? target.replace(/^(\([cde]\)) gateway(?:, | \+ )/, '$1 ') : null;
    if (line === null) continue;
    const pair = [
      result({
        name: `gateway ${line}, vs nginx, requests/s`,
        unit: 'req/s',
        ours: ours.rps,
        baseline: 'nginx 1.22 reverse proxy',
        baselineValue: nginx.rps,
        better: 'higher',
        details,
      }),
      result({
        name: `gateway ${line}, vs nginx, CPU per request`,
        unit: 'µs',
        ours: ours.cpuUsPerRequest,
        baseline: 'nginx 1.22 reverse proxy',
        baselineValue: nginx.cpuUsPerRequest,
        better: 'lower',
      }),
    ];
    console.log(
      `${line}: ${(ours.rps / nginx.rps).toFixed(2)} of nginx's requests/s (${ours.rps.toFixed(0)} vs ${nginx.rps.toFixed(0)}); ` +
        `CPU per request ${ours.cpuUsPerRequest.toFixed(1)} vs ${nginx.cpuUsPerRequest.toFixed(1)} µs ` +
        `(user ${ours.userUsPerRequest.toFixed(1)} vs ${nginx.userUsPerRequest.toFixed(1)}, system ${ours.systemUsPerRequest.toFixed(1)} vs ${nginx.systemUsPerRequest.toFixed(1)})`,
    );
    for (const r of pair) report(r);
    results.push(...pair);
  }
  return results;
}
