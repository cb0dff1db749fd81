/**
 * Test set-up for the container suites: podman configured for this kind of
 * machine, and the images built the way `npm run image -- --offline` builds
 * them (scripts/image.ts: the Node base from Debian packages, the offcloud
 * image from the clone's files and installed production packages, stand-ins
 * for compose's Redis and etcd), once, shared by every suite (a lock file
 * serialises concurrent test files and runs). Nothing here needs a registry.
 */
import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { debianProgram } from '../helpers/index.ts';
import {
  buildDebianImage,
  buildNodeBase,
  buildOfflineImage,
  composeDefault,
  contextFiles,
  OFFLINE_BASE,
  productionPackages,
  STAND_INS,
} from '../../scripts/image.ts';

export { composeDefault } from '../../scripts/image.ts';
export const ROOT = new URL('../..', import.meta.url).pathname;
export const IMAGE = 'localhost/offcloud:test';
/** The Node base image the offcloud image and the stand-ins are built on. */
export const BASE_IMAGE = OFFLINE_BASE;
/**
 * For the hooks that may build: on a clean machine the base image, the
 * offcloud image and compose's stand-ins take minutes (the suites' default
 * test timeout is 5).
 */
export const BUILD_TIMEOUT = { timeout: 1_800_000 };
/**
 * Kept between runs and shared by every clone on the machine (the images are
 * too): the build lock and podman's settings for the tests. Not under the
 * temporary folder, which `npm test` checks is left empty.
 */
const WORK = '/var/tmp/offcloud-containers';
const CONTEXT_LABEL = 'offcloud.test.context';
const run = promisify(execFile);
const QUIET = { quiet: true };

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

function exists(kind: 'image' | 'container', name: string): boolean {
  return spawnSync('podman', [kind, 'exists', name]).status === 0;
}

/** The Node base, made from Debian packages the first time (kept between runs); the caller holds the build lock. */
async function ensureBaseImage(): Promise<void> {
  if (!exists('image', BASE_IMAGE)) await buildNodeBase(BASE_IMAGE, QUIET);
}

/** The image `npm run setup` made on the Node base, and the hash of what it was made from. */
export const SETUP_IMAGE = 'localhost/offcloud-setup:test';
const SETUP_LABEL = 'offcloud.test.setup';
const SETUP_FILES = ['scripts/setup.mjs', 'scripts/debian-packages.txt'];

/** The repository mounted read-only at /repo, where setup.mjs runs as `npm run setup` runs it. */
export const REPO_MOUNT = ['-v', `${ROOT}:/repo:ro`];

/** What the setup image is made from: the setup script, the package list and the base. */
async function setupHash(): Promise<string> {
  const base = (await podman(['image', 'inspect', '--format', '{{.Id}}', BASE_IMAGE])).stdout.trim();
  const hash = createHash('sha256').update(base);
  for (const path of SETUP_FILES) hash.update(readFileSync(join(ROOT, path)));
  return hash.digest('hex').slice(0, 32);
}

/** The hash the setup image carries (empty when there is none). */
export async function setupImageHash(): Promise<{ current: string; wanted: string }> {
  const current = exists('image', SETUP_IMAGE)
    ? (await podman(['image', 'inspect', '--format', `{{index .Labels "${SETUP_LABEL}"}}`, SETUP_IMAGE])).stdout.trim()
    : '';
  return { current, wanted: await setupHash() };
}

/**
 * `npm run setup` (scripts/setup.mjs, as root) on the Node base, a minimal Debian with nothing
 * else installed, kept as SETUP_IMAGE until the script, the list or the base changes: it
 * installs every listed package without Recommends, as on a clean machine, and fails when one
 * cannot be installed. Minutes (chromium, firefox-esr…), so it runs in the set-up, outside the
 * runner's per-file limit; the Debian archives are kept for the next time. dpkg skips its
 * fsyncs (force-unsafe-io, as Debian's own container images do): nothing here survives a crash.
 */
export function ensureSetupImage(): Promise<void> {
  return withLock('build', async () => {
    await ensureBaseImage();
    const { current, wanted } = await setupImageHash();
    if (current === wanted) return;
    const archives = join(WORK, 'apt-archives');
    mkdirSync(archives, { recursive: true });
    const name = `offcloud-setup-${process.pid}`;
    try {
      const script = 'echo force-unsafe-io > /etc/dpkg/dpkg.cfg.d/unsafe-io && node /repo/scripts/setup.mjs';
      await podman(['run', '--name', name, ...REPO_MOUNT, '-v', `${archives}:/var/cache/apt/archives`, BASE_IMAGE, 'sh', '-c', script], {
        timeoutMs: 1_500_000,
      });
      await podman(['commit', '--change', `LABEL ${SETUP_LABEL}=${wanted}`, name, SETUP_IMAGE]);
      await podman(['image', 'prune', '--force', '--filter', `label=${SETUP_LABEL}`]);
    } finally {
      await podman(['rm', '--force', '--volumes', name]).catch(() => undefined);
    }
  });
}

/** The public images compose.yaml and the Kubernetes manifests use besides offcloud, made here from Debian packages. */
export async function ensureStandIns(): Promise<void> {
  await withLock('build', async () => {
    for (const { variable, packages } of STAND_INS) {
      const image = composeDefault(variable);
      if (exists('image', image)) continue;
      await ensureBaseImage();
      await buildDebianImage(image, BASE_IMAGE, packages, QUIET);
    }
  });
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
    const hash = contextHash(await contextFiles());
    let built = false;
    const current = exists('image', IMAGE) ? (await podman(['image', 'inspect', '--format', `{{index .Labels "${CONTEXT_LABEL}"}}`, IMAGE])).stdout.trim() : '';
    if (current !== hash) {
      await buildOfflineImage({ tag: IMAGE, base: BASE_IMAGE, labels: { [CONTEXT_LABEL]: hash }, options: QUIET });
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
 * `DeviceId=demo-device;SharedAccessKey=`, or `imagenet primary key` before
 * `: <key>`). The table never breaks a value (src/up/table.ts), so the key is
 * whole on its line.
 */
export function printedKey(output: string, label: string): string | undefined {
  const at = output.indexOf(label);
  // Only a whole key, one with something after it (a log read while the table is still being written
  // may end inside the key).
  return at < 0 ? undefined : /^:? *([A-Za-z0-9+/_-]+={0,2})(?=[^A-Za-z0-9+/_=-])/.exec(output.slice(at + label.length))?.[1];
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
  if (exists('container', name)) await podman(['rm', '--force', '--volumes', '--time', '0', name]).catch(() => undefined);
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
