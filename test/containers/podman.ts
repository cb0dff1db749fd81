/**
 * Test set-up for the container suites: podman configured for this kind of
 * machine, the Containerfile's base image made locally when no registry is
 * reachable, and the offcloud image built once from the repository's files and
 * shared by every suite (a lock file serialises concurrent test files).
 * Nothing here is part of the user's path: the Containerfile builds unchanged
 * on a machine with a registry.
 */
import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, openSync, closeSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { debianProgram } from '../helpers/index.ts';

export const ROOT = new URL('../..', import.meta.url).pathname;
export const IMAGE = 'localhost/offcloud:test';
/**
 * For the hooks that may build: on a clean machine the base image, the
 * offcloud image and compose's stand-ins take minutes (the suites' default
 * test timeout is 5).
 */
export const BUILD_TIMEOUT = { timeout: 1_800_000 };
const WORK = join(tmpdir(), 'offcloud-containers');
const CONTEXT_LABEL = 'offcloud.test.context';
const run = promisify(execFile);

/** The Containerfile's default base image (its `ARG NODE_IMAGE=`). */
export const BASE_IMAGE = /^ARG NODE_IMAGE=(\S+)$/m.exec(readFileSync(join(ROOT, 'Containerfile'), 'utf8'))![1]!;

/**
 * As root on a CI machine podman needs two settings this test set-up writes
 * for itself (in its own file, through CONTAINERS_CONF): runc, because crun
 * refuses hybrid cgroup hierarchies, and no default ulimits, because raising
 * them fails with EPERM inside an unprivileged CI sandbox.
 */
function configurePodman(): void {
  debianProgram('podman', '/usr/bin/podman');
  if (process.getuid?.() !== 0 || process.env.CONTAINERS_CONF) return;
  const file = join(WORK, 'containers.conf');
  mkdirSync(WORK, { recursive: true });
  writeFileSync(file, '[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n');
  process.env.CONTAINERS_CONF = file;
}
configurePodman();

export interface Output {
  stdout: string;
  stderr: string;
}

/** Runs podman (or podman-compose) and resolves with its output; rejects with stderr on failure. */
export async function podman(args: string[], options: { timeoutMs?: number; program?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Output> {
  try {
    return await run(options.program ?? 'podman', args, { timeout: options.timeoutMs ?? 300_000, maxBuffer: 64 * 1024 * 1024, env: options.env });
  } catch (err) {
    const e = err as Error & { stderr?: string; stdout?: string };
    throw new Error(`${options.program ?? 'podman'} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`.slice(0, 8000));
  }
}

/** podman's exit status and output, for commands a test expects to fail. */
export function podmanStatus(args: string[]): { status: number | null } & Output {
  const result = spawnSync('podman', args, { encoding: 'utf8', timeout: 300_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

async function exists(kind: 'image' | 'container', name: string): Promise<boolean> {
  return spawnSync('podman', [kind, 'exists', name]).status === 0;
}

/**
 * No registry answers here, so the base image is made the way the public one
 * is: a Debian bookworm root filesystem (mmdebstrap) with this machine's Node 20
 * in /usr/local/bin, imported under the public name. Kept between runs.
 */
async function ensureBaseImage(): Promise<void> {
  if (await exists('image', BASE_IMAGE)) return;
  const mmdebstrap = debianProgram('mmdebstrap', '/usr/bin/mmdebstrap');
  const tar = join(WORK, 'base.tar');
  await podman(
    [
      '--variant=minbase',
      '--mode=root',
      '--format=tar',
      `--customize-hook=copy-in ${process.execPath} /usr/local/bin`,
      'bookworm',
      tar,
      'http://deb.debian.org/debian',
    ],
    { program: mmdebstrap, timeoutMs: 900_000 },
  );
  await podman(['import', '--change', 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', '--change', 'CMD ["node"]', tar, BASE_IMAGE]);
  rmSync(tar, { force: true });
}

/**
 * Stand-ins for a public image another file names (compose.yaml's redis and
 * etcd): the base image with the Debian packages that provide the programs.
 */
async function ensureDebianImage(image: string, debianPackages: string[]): Promise<void> {
  await withLock('build', async () => {
    if (await exists('image', image)) return;
    await ensureBaseImage();
    const dir = join(WORK, `stand-in-${debianPackages[0]}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'Containerfile'),
      `FROM ${BASE_IMAGE}\nRUN apt-get update && apt-get install -y --no-install-recommends ${debianPackages.join(' ')} && apt-get clean && rm -rf /var/lib/apt/lists/*\n`,
    );
    await podman(['build', '--pull=never', '-t', image, dir], { timeoutMs: 900_000 });
  });
}

const COMPOSE_TEXT = readFileSync(join(ROOT, 'compose.yaml'), 'utf8');

/** The image compose.yaml names by default for `${VARIABLE:-image}`. */
export function composeDefault(variable: string): string {
  return new RegExp(`\\$\\{${variable}:-([^}]+)\\}`).exec(COMPOSE_TEXT)![1]!;
}

/** The public images compose.yaml and the Kubernetes manifests use besides offcloud, made here from Debian packages. */
export async function ensureStandIns(): Promise<void> {
  await ensureDebianImage(composeDefault('REDIS_IMAGE'), ['redis-server']);
  await ensureDebianImage(composeDefault('ETCD_IMAGE'), ['etcd-server', 'etcd-client']);
}

/**
 * The files of a clone (tracked, or new and not ignored) that the build
 * context holds: the ones .containerignore lets in (its `!path` lines).
 */
function contextFiles(): string[] {
  const allowed = readFileSync(join(ROOT, '.containerignore'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('!'))
    .map((line) => line.slice(1).replace(/\/$/, ''));
  const listed = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' });
  if (listed.status !== 0) throw new Error(`git ls-files failed: ${listed.stderr}`);
  return listed.stdout
    .split('\0')
    .filter((path) => allowed.some((prefix) => path === prefix || path.startsWith(`${prefix}/`)))
    .filter((path) => existsSync(join(ROOT, path)) && statSync(join(ROOT, path)).isFile())
    .concat('Containerfile');
}

/** The installed packages `npm ci --omit=dev` would install, as paths under the repository. */
function productionPackages(): string[] {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
  return Object.entries(lock.packages)
    .filter(([path, entry]) => path.startsWith('node_modules/') && !entry.dev && existsSync(join(ROOT, path)))
    .map(([path]) => path)
    .filter((path, _i, all) => !all.some((other) => path.startsWith(`${other}/`)));
}

/**
 * A build context as a clean clone plus its production dependencies: the
 * repository's files, and the packages the host already installed (hard links,
 * so nothing is copied), so the build needs no registry (DEPENDENCIES=context).
 */
function stageContext(files: string[]): string {
  const context = join(WORK, 'context');
  rmSync(context, { recursive: true, force: true });
  for (const path of files) {
    mkdirSync(dirname(join(context, path)), { recursive: true });
    cpSync(join(ROOT, path), join(context, path), { verbatimSymlinks: true });
  }
  const modules = realpathSync(join(ROOT, 'node_modules'));
  for (const path of productionPackages()) {
    const to = join(context, path);
    mkdirSync(dirname(to), { recursive: true });
    const copied = spawnSync('cp', ['-al', join(modules, path.slice('node_modules/'.length)), to]);
    if (copied.status !== 0) throw new Error(`cp -al ${path} failed: ${copied.stderr}`);
  }
  return context;
}

function contextHash(files: string[]): string {
  const hash = createHash('sha256');
  for (const path of files.sort())
    hash
      .update(path)
      .update('\0')
      .update(readFileSync(join(ROOT, path)))
      .update('\0');
  hash.update(JSON.stringify(productionPackages()));
  return hash.digest('hex').slice(0, 32);
}

/** Holds a lock file for the build; a lock whose process is gone is taken over. */
async function withLock<T>(name: string, work: () => Promise<T>): Promise<T> {
  const path = join(WORK, `${name}.lock`);
  mkdirSync(WORK, { recursive: true });
  for (;;) {
    try {
      closeSync(openSync(path, 'wx'));
      writeFileSync(path, String(process.pid));
      break;
    } catch {
      const holder = Number(readFileSync(path, 'utf8') || 0);
      let alive = holder > 0;
      try {
        if (alive) process.kill(holder, 0);
      } catch {
        alive = false;
      }
      if (!alive) rmSync(path, { force: true });
      else await sleep(1000);
    }
  }
  try {
    return await work();
  } finally {
    rmSync(path, { force: true });
  }
}

export interface BuiltImage {
  image: string;
  sizeBytes: number;
  /** Whether this call built it (false: an image of the same files was already there). */
  built: boolean;
}

/** Builds the offcloud image from the repository's files once; later calls with the same files reuse it. */
export function ensureImage(): Promise<BuiltImage> {
  return withLock('build', async () => {
    await ensureBaseImage();
    const files = contextFiles();
    const hash = contextHash(files);
    let built = false;
    const current = (await exists('image', IMAGE))
      ? (await podman(['image', 'inspect', '--format', `{{index .Labels "${CONTEXT_LABEL}"}}`, IMAGE])).stdout.trim()
      : '';
    if (current !== hash) {
      const context = stageContext(files);
      await podman(['build', '--pull=never', '--build-arg', 'DEPENDENCIES=context', '--label', `${CONTEXT_LABEL}=${hash}`, '-t', IMAGE, context], {
        timeoutMs: 1_200_000,
      });
      rmSync(context, { recursive: true, force: true });
      // The image this one replaces, now untagged.
      await podman(['image', 'prune', '--force', '--filter', `label=${CONTEXT_LABEL}`]);
      built = true;
    }
    const sizeBytes = Number((await podman(['image', 'inspect', '--format', '{{.Size}}', IMAGE])).stdout.trim());
    return { image: IMAGE, sizeBytes, built };
  });
}

/**
 * A key a component printed in its start-up table after `label` (e.g.
 * `DeviceId=demo-device;SharedAccessKey=`): the table may wrap a long value
 * onto the next line, so white space after the label is skipped.
 */
export function printedKey(output: string, label: string): string | undefined {
  // The table wraps a long value after `;`, `,`, `/` or `=` (src/up/table.ts), and a base64 key
  // may hold a `/`: join those breaks back first, then read the key up to its `=` padding.
  const unwrapped = output.replace(/([;,/=])\r?\n[ \t]+/g, '$1');
  const at = unwrapped.indexOf(label);
  // Only a whole key, one with something after it (a log read while the table is still being written
  // may end inside the key).
  return at < 0 ? undefined : /^\s*([A-Za-z0-9+/_-]+={0,2})(?=[^A-Za-z0-9+/_=-])/.exec(unwrapped.slice(at + label.length))?.[1];
}

/**
 * The key printed after `label` in a container's start-up table, read from `podman logs` until the
 * table has been written that far (a component answers /ready before its table is printed).
 */
export async function printedKeyInLogs(container: string, label: string, timeoutMs = 120_000): Promise<{ key: string; stdout: string }> {
  const start = performance.now();
  for (;;) {
    const { stdout } = await podman(['logs', container]);
    const key = printedKey(stdout, label);
    if (key) return { key, stdout };
    if (performance.now() - start > timeoutMs) throw new Error(`${container} printed no "${label}" within ${timeoutMs} ms:\n${stdout}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** Removes a container (if it is there) when the test ends. */
export async function removeContainer(name: string): Promise<void> {
  if (await exists('container', name)) await podman(['rm', '--force', '--volumes', '--time', '0', name]).catch(() => undefined);
}

/** Waits until a URL answers 2xx (the component's /ready), or fails naming the container's logs. */
export async function waitReady(url: string, container: string, timeoutMs = 180_000, init?: RequestInit): Promise<number> {
  const start = performance.now();
  let last = '';
  while (performance.now() - start < timeoutMs) {
    try {
      const response = await fetch(url, { ...init, signal: AbortSignal.timeout(5000) });
      if (response.ok) return performance.now() - start;
      last = `status ${response.status}`;
    } catch (err) {
      last = (err as Error).message;
    }
    const state = spawnSync('podman', ['inspect', '--format', '{{.State.Status}}', container], { encoding: 'utf8' }).stdout.trim();
    if (state === 'exited' || state === 'stopped') break;
    await sleep(250);
  }
  const logs = spawnSync('podman', ['logs', '--tail', '40', container], { encoding: 'utf8' });
  throw new Error(`${url} not ready (${last}); logs of ${container}:\n${logs.stdout}${logs.stderr}`);
}
