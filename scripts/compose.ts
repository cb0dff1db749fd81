/**
 * `npm run compose -- up [SERVICE...]` and `npm run compose -- down`: compose.yaml under
 * podman-compose, doing the two things podman-compose 1.0 (Debian bookworm's) leaves out and
 * docker compose does itself (with docker, run `docker compose up -d` / `down -v` directly):
 *
 * - `depends_on` conditions. podman-compose 1.0 starts the services in dependency order but
 *   never waits for `service_healthy`, and podman without systemd runs no health check on its
 *   own. `up` starts first every service another one waits for as healthy (with what it needs),
 *   runs its health check (`podman healthcheck run`) until it passes, then starts the services
 *   asked for (all by default) with `podman-compose up -d`.
 * - `down -v` leaves the project's network behind. `down` runs it, then removes the networks
 *   podman-compose made for the project (labelled with its name).
 *
 * The project is COMPOSE_PROJECT_NAME (default `offcloud`, so the containers are
 * `offcloud_<service>_1` wherever the clone lies); compose.yaml reads its ports and images from
 * the environment. A health check that has not passed within the service's start_period plus
 * retries × interval fails `up`, with the service's last log lines.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse } from 'yaml';
import { ROOT, run } from './image.ts';

const COMPOSE_FILE = join(ROOT, 'compose.yaml');
const USAGE = 'usage: npm run compose -- up [SERVICE...] | down';

interface Service {
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { interval?: string; retries?: number; start_period?: string };
}

export function projectName(env: NodeJS.ProcessEnv = process.env): string {
  return env.COMPOSE_PROJECT_NAME || 'offcloud';
}

/** A compose duration (`2s`, `1m30s`, `500ms`) in milliseconds. */
export function durationMs(text: string | undefined): number {
  if (!text) return 0;
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001 };
  let total = 0;
  for (const [, amount, unit] of text.matchAll(/(\d+(?:\.\d+)?)(h|ms|us|m|s)/g)) total += Number(amount) * units[unit!]!;
  return total;
}

function dependencies(service: Service): [name: string, condition: string][] {
  const given = service.depends_on ?? [];
  return Array.isArray(given)
    ? given.map((name) => [name, 'service_started'])
    : Object.entries(given).map(([name, d]) => [name, d.condition ?? 'service_started']);
}

/**
 * The services `up` starts first and waits for: those another service of `wanted` (or of the
 * whole file when none is named), or of what they need, waits for as healthy.
 */
export function healthyFirst(services: Record<string, Service>, wanted: string[]): string[] {
  const needed = new Set<string>();
  const visit = (name: string) => {
    if (needed.has(name)) return;
    if (!services[name]) throw new Error(`compose.yaml has no service ${JSON.stringify(name)}\n${USAGE}`);
    needed.add(name);
    for (const [dependency] of dependencies(services[name])) visit(dependency);
  };
  for (const name of wanted.length ? wanted : Object.keys(services)) visit(name);
  const waited = new Set<string>();
  for (const name of needed) for (const [dependency, condition] of dependencies(services[name]!)) if (condition === 'service_healthy') waited.add(dependency);
  return [...waited];
}

/** The container podman-compose 1.0 names for a service's first replica. */
function containerOf(project: string, service: string): string {
  return `${project}_${service}_1`;
}

async function waitHealthy(project: string, name: string, service: Service): Promise<void> {
  const check = service.healthcheck ?? {};
  const interval = durationMs(check.interval) || 30_000;
  const deadline = performance.now() + durationMs(check.start_period) + (check.retries ?? 3) * interval;
  const container = containerOf(project, name);
  for (;;) {
    const healthy = await run('podman', ['healthcheck', 'run', container], { quiet: true }).then(
      () => true,
      () => false,
    );
    if (healthy) return;
    if (performance.now() > deadline) {
      const logs = await run('podman', ['logs', '--tail', '20', container], { quiet: true }).catch((err: Error) => err.message);
      throw new Error(`${container} is not healthy (its health check has not passed); its last log lines:\n${logs}`);
    }
    await sleep(interval);
  }
}

function podmanCompose(project: string, args: string[]): Promise<string> {
  return run('podman-compose', ['-p', project, '-f', COMPOSE_FILE, ...args]);
}

export async function up(wanted: string[], project = projectName()): Promise<void> {
  // merge: compose.yaml's services share settings through YAML merge keys (<<: *offcloud).
  const { services } = parse(readFileSync(COMPOSE_FILE, 'utf8'), { merge: true }) as { services: Record<string, Service> };
  const first = healthyFirst(services, wanted);
  if (first.length) {
    await podmanCompose(project, ['up', '-d', ...first]);
    for (const name of first) {
      await waitHealthy(project, name, services[name]!);
      console.log(`compose: ${name} is healthy`);
    }
  }
  await podmanCompose(project, ['up', '-d', ...wanted]);
}

export async function down(project = projectName()): Promise<void> {
  await podmanCompose(project, ['down', '-v']);
  const label = `label=io.podman.compose.project=${project}`;
  const networks = (await run('podman', ['network', 'ls', '--quiet', '--filter', label], { quiet: true })).split('\n').filter(Boolean);
  if (networks.length) await run('podman', ['network', 'rm', ...networks]);
}

async function main(): Promise<void> {
  const [command, ...services] = process.argv.slice(2);
  if (command === 'up') await up(services);
  else if (command === 'down' && !services.length) await down();
  else throw new Error(USAGE);
}

if (process.argv[1] && realpathSync(process.argv[1]) === realpathSync(new URL(import.meta.url).pathname)) {
  main().catch((err: unknown) => {
    console.error(`compose: ${(err as Error).message}`);
    process.exit(1);
  });
}
