/**
 * `npm run image`: builds the offcloud image from the repository.
 *
 *   npm run image                     registry path: `podman build` (or docker) of the
 *                                     Containerfile; the Node image and `npm ci --omit=dev`
 *                                     come from the registries
 *   npm run image -- --offline        no image or npm registry: the Node base made from
 *                                     Debian packages (mmdebstrap) and this machine's Node,
 *                                     the production packages this clone already installed,
 *                                     and stand-ins for compose.yaml's Redis and etcd images
 *                                     (Debian's redis-server and etcd), tagged as compose names them
 *   --tag NAME                        the image's name (default localhost/offcloud:dev)
 *
 * The container test set-up (test/containers/podman.ts) builds its image the same way.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';

export const ROOT = new URL('..', import.meta.url).pathname;
export const DEFAULT_TAG = 'localhost/offcloud:dev';
/** The Node base `--offline` makes: Debian bookworm (minbase), tini, and this machine's Node in /usr/local/bin. */
export const OFFLINE_BASE = 'localhost/offcloud-node:20-bookworm';
const DEBIAN_MIRROR = 'http://deb.debian.org/debian';

export interface RunOptions {
  /** Capture the output (and put it in the error) instead of showing it. */
  quiet?: boolean;
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
}

/** Runs a program; resolves with its stdout, rejects naming the command and its output. */
export function run(program: string, args: string[], options: RunOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      program,
      args,
      { timeout: options.timeoutMs ?? 1_800_000, maxBuffer: 256 * 1024 * 1024, env: options.env ?? process.env },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout);
        reject(new Error(`${program} ${args.join(' ')} failed: ${err.message}\n${stdout}\n${stderr}`.slice(0, 8000)));
      },
    );
    if (!options.quiet) {
      child.stdout?.pipe(process.stdout);
      child.stderr?.pipe(process.stderr);
    }
  });
}

/** podman, or docker where podman is missing. */
export function containerEngine(): string {
  const dirs = (process.env.PATH ?? '').split(':').filter(Boolean);
  for (const name of ['podman', 'docker']) {
    const dir = dirs.find((d) => existsSync(join(d, name)));
    if (dir) return join(dir, name);
  }
  throw new Error('neither podman nor docker is on PATH');
}

/** The value after `default` in compose.yaml's `${VARIABLE:-default}`: the image compose runs. */
export function composeDefault(variable: string): string {
  const text = readFileSync(join(ROOT, 'compose.yaml'), 'utf8');
  const found = new RegExp(`\\$\\{${variable}:-([^}]+)\\}`).exec(text)?.[1];
  if (!found) throw new Error(`compose.yaml has no \${${variable}:-…}`);
  return found;
}

/**
 * The Node base from Debian packages: a bookworm root file system made by mmdebstrap
 * (the Debian mirror is the only thing it reaches), tini, this machine's `node`, imported as `tag`.
 */
export async function buildNodeBase(tag: string, options: RunOptions = {}): Promise<void> {
  const mmdebstrap = '/usr/bin/mmdebstrap';
  if (!existsSync(mmdebstrap)) throw new Error(`${mmdebstrap} is missing: install the Debian package "mmdebstrap"`);
  const work = mkdtempSync(join(tmpdir(), 'offcloud-base-'));
  try {
    const tar = join(work, 'base.tar');
    await run(
      mmdebstrap,
      ['--variant=minbase', '--include=tini', '--format=tar', `--customize-hook=copy-in ${process.execPath} /usr/local/bin`, 'bookworm', tar, DEBIAN_MIRROR],
      options,
    );
    await run(
      containerEngine(),
      ['import', '--change', 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', '--change', 'CMD ["node"]', tar, tag],
      options,
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * An image from `base` with Debian packages installed: the stand-ins for the public
 * images compose.yaml and the Kubernetes manifests name (`apt-get` reaches the Debian mirror).
 */
export async function buildDebianImage(tag: string, base: string, debianPackages: string[], options: RunOptions = {}): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'offcloud-stand-in-'));
  try {
    writeFileSync(
      join(work, 'Containerfile'),
      `FROM ${base}\nRUN apt-get update && apt-get install -y --no-install-recommends ${debianPackages.join(' ')} && apt-get clean && rm -rf /var/lib/apt/lists/*\n`,
    );
    await run(containerEngine(), ['build', '--pull=never', '-t', tag, work], options);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** compose.yaml's Redis and etcd images, made from Debian's packages on `base`. */
export const STAND_INS: { variable: string; packages: string[] }[] = [
  { variable: 'REDIS_IMAGE', packages: ['redis-server'] },
  { variable: 'ETCD_IMAGE', packages: ['etcd-server', 'etcd-client'] },
];

/** The files of the clone (tracked, or new and not ignored) that .containerignore lets into the build context. */
export async function contextFiles(): Promise<string[]> {
  const allowed = readFileSync(join(ROOT, '.containerignore'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('!'))
    .map((line) => line.slice(1).replace(/\/$/, ''));
  const listed = await run('git', ['-C', ROOT, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], { quiet: true });
  return listed
    .split('\0')
    .filter((path) => allowed.some((prefix) => path === prefix || path.startsWith(`${prefix}/`)))
    .filter((path) => existsSync(join(ROOT, path)) && statSync(join(ROOT, path)).isFile())
    .concat('Containerfile');
}

/** The installed packages `npm ci --omit=dev` would install, as paths under the repository (outermost only). */
export function productionPackages(): string[] {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
  return Object.entries(lock.packages)
    .filter(([path, entry]) => path.startsWith('node_modules/') && !entry.dev && existsSync(join(ROOT, path)))
    .map(([path]) => path)
    .filter((path, _i, all) => !all.some((other) => path.startsWith(`${other}/`)));
}

/**
 * A build context holding the clone's files and its production packages (hard links
 * where the file system allows, so little is copied): what DEPENDENCIES=context builds from.
 */
export async function stageContext(context: string, files: string[]): Promise<void> {
  rmSync(context, { recursive: true, force: true });
  for (const path of files) {
    mkdirSync(dirname(join(context, path)), { recursive: true });
    cpSync(join(ROOT, path), join(context, path), { verbatimSymlinks: true });
  }
  const modules = realpathSync(join(ROOT, 'node_modules'));
  for (const path of productionPackages()) {
    const [from, to] = [join(modules, path.slice('node_modules/'.length)), join(context, path)];
    mkdirSync(dirname(to), { recursive: true });
    // Hard links (-l) on one file system; a copy across two.
    await run('cp', ['-al', from, to], { quiet: true }).catch(async () => {
      rmSync(to, { recursive: true, force: true });
      await run('cp', ['-a', from, to], { quiet: true });
    });
  }
}

export interface OfflineBuild {
  tag: string;
  /** The Node base to build on (made by buildNodeBase). */
  base: string;
  labels?: Record<string, string>;
  options?: RunOptions;
}

/** The offcloud image from a staged context (no registry): `podman build --build-arg DEPENDENCIES=context`. */
export async function buildOfflineImage({ tag, base, labels = {}, options = {} }: OfflineBuild): Promise<void> {
  const context = mkdtempSync(join(tmpdir(), 'offcloud-context-'));
  try {
    await stageContext(context, await contextFiles());
    const labelArgs = Object.entries(labels).flatMap(([key, value]) => ['--label', `${key}=${value}`]);
    await run(
      containerEngine(),
      ['build', '--pull=never', '--build-arg', `NODE_IMAGE=${base}`, '--build-arg', 'DEPENDENCIES=context', ...labelArgs, '-t', tag, context],
      options,
    );
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
}

async function imageExists(tag: string): Promise<boolean> {
  return run(containerEngine(), ['image', 'exists', tag], { quiet: true }).then(
    () => true,
    () => false,
  );
}

async function timed(what: string, work: () => Promise<void>): Promise<void> {
  const started = performance.now();
  await work();
  console.log(`image: ${what} in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { offline: { type: 'boolean', default: false }, tag: { type: 'string', default: DEFAULT_TAG } } });
  const tag = values.tag;
  if (!values.offline) {
    await timed(tag, () => run(containerEngine(), ['build', '-t', tag, ROOT]).then(() => undefined));
    return;
  }
  if (!existsSync(join(ROOT, 'node_modules/.package-lock.json')))
    throw new Error('--offline takes the production packages from node_modules: run npm ci first');
  const made = async (image: string, what: string, build: () => Promise<void>) => {
    if (await imageExists(image)) console.log(`image: ${image} is there (podman rmi it to make it again)`);
    else await timed(`${image} ${what}`, build);
  };
  await made(OFFLINE_BASE, 'from Debian packages', () => buildNodeBase(OFFLINE_BASE));
  await timed(tag, () => buildOfflineImage({ tag, base: OFFLINE_BASE }));
  for (const { variable, packages } of STAND_INS) {
    const standIn = composeDefault(variable);
    await made(standIn, `(stand-in: Debian's ${packages.join(', ')})`, () => buildDebianImage(standIn, OFFLINE_BASE, packages));
  }
}

if (process.argv[1] && realpathSync(process.argv[1]) === realpathSync(new URL(import.meta.url).pathname)) {
  main().catch((err: unknown) => {
    console.error(`image: ${(err as Error).message}`);
    process.exit(1);
  });
}
