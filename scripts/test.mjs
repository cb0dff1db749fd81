#!/usr/bin/env node
// `npm test`: runs every test/**/*.test.ts with node:test through tsx;
// `npm test -- test/calculator` runs one folder (or file) instead.
// What the suites need installed comes first, from `npm run setup`.
// The container suites (files that import the podman helpers) run after the
// others, with a longer per-file limit: each starts a dozen containers that
// load their models, which on a loaded machine takes minutes.
// At the end it checks that the suites left nothing behind: their temporary
// folders (the run gives them one of its own as TMPDIR), and, when container
// suites ran, podman's containers, volumes, networks, pods, secrets and conmon
// processes that were not there before.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { cpus, tmpdir } from 'node:os';

const root = new URL('..', import.meta.url).pathname;
process.chdir(root);

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options });
  return result.status ?? 1;
}

function findTests(path) {
  if (statSync(path).isFile()) return path.endsWith('.test.ts') ? [path] : [];
  return readdirSync(path)
    .sort()
    .flatMap((name) => findTests(join(path, name)));
}

/** A process's command name, or '' once it has gone. */
function commandName(pid) {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

/** What podman holds now, by kind ("container foo", "conmon 1234"), when podman is installed. */
function podmanObjects() {
  const kinds = {
    container: ['ps', '--all', '--format', '{{.Names}}'],
    volume: ['volume', 'ls', '--format', '{{.Name}}'],
    network: ['network', 'ls', '--format', '{{.Name}}'],
    pod: ['pod', 'ps', '--format', '{{.Name}}'],
    secret: ['secret', 'ls', '--format', '{{.Name}}'],
  };
  const objects = Object.entries(kinds).flatMap(([kind, args]) => {
    const listed = spawnSync('podman', args, { encoding: 'utf8' });
    if (listed.error?.code === 'ENOENT') return [];
    // A listing that fails is reported (as an object of its own): the check must not pass unseen.
    if (listed.status !== 0) return [`(podman ${args.join(' ')} failed: ${listed.stderr.trim()})`];
    return listed.stdout
      .split('\n')
      .filter(Boolean)
      .map((name) => `${kind} ${name}`);
  });
  // Each container and exec session has a conmon; one left running outlives what it watched.
  const conmons = readdirSync('/proc')
    .filter((pid) => /^\d+$/.test(pid) && commandName(pid) === 'conmon')
    .map((pid) => `conmon process ${pid}`);
  return new Set([...objects, ...conmons]);
}

const targets = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const files = (targets.length ? targets : ['test']).flatMap(findTests);
if (!files.length) {
  console.error('test: no test files found');
  process.exit(1);
}
// The container suites import their podman helpers (test/containers/podman.ts); only their
// runs compare podman's objects (another run on the same machine may be creating its own meanwhile).
const containerFiles = files.filter((file) => /\/podman\.ts';/.test(readFileSync(file, 'utf8')));
const otherFiles = files.filter((file) => !containerFiles.includes(file));
const containerSuites = containerFiles.length > 0;
const podmanBefore = containerSuites ? podmanObjects() : new Set();
const runTmp = mkdtempSync(join(tmpdir(), 'offcloud-run-'));
const env = { ...process.env, TMPDIR: runTmp, OFFCLOUD_TESTING: '1' };

/** podman's objects the run made and left; a conmon still exiting from a container just removed is given 10 s. */
function newPodmanObjects() {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const left = [...podmanObjects()].filter((object) => !podmanBefore.has(object));
    if (!left.every((object) => object.startsWith('conmon ')) || !left.length || Date.now() > deadline) return left;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 250);
  }
}

/** What the run left behind (and the run's temporary folder removed). */
function leftBehind() {
  // Libraries keep files of their own there, which no suite made (removed with the folder):
  // tsx its compile cache, Testcontainers the lock its processes share, ONNX Runtime an empty
  // mat-debug-<pid>.log and .ses per process that loads it.
  const left = readdirSync(runTmp)
    .filter((name) => !/^(tsx-\d+|testcontainers-node-\d+\.lock|mat-debug-\d+\.log|\.ses)$/.test(name))
    .map((name) => `temporary ${join(runTmp, name)}`);
  // A process of a file the runner stopped at its time limit may still be writing there as it exits.
  rmSync(runTmp, { recursive: true, force: true, maxRetries: 10 });
  if (containerSuites) left.push(...newPodmanObjects());
  return left;
}

/** Exits with the suites' status, or 1 when they passed but left something behind. */
function finish(status) {
  const left = leftBehind();
  if (left.length) console.error(`test: the suites left behind (not there before the run):\n  ${left.join('\n  ')}`);
  process.exit(status !== 0 ? status : left.length ? 1 : 0);
}

// A folder's own set-up (test/<folder>/setup.ts, e.g. container images to build) runs once
// before its suites, outside the runner's per-file timeout.
for (const setup of new Set(files.map((file) => join(dirname(file), 'setup.ts')))) {
  if (existsSync(setup)) {
    const status = run(process.execPath, ['--import', 'tsx', setup], { env });
    if (status !== 0) finish(status);
  }
}
const concurrency = process.env.OFFCLOUD_TEST_CONCURRENCY ?? String(Math.max(2, cpus().length));
/** node:test over `list`, each file stopped after `limitMs`; its exit status (0 for no file). */
function runSuites(list, limitMs) {
  if (!list.length) return 0;
  // --test-force-exit: a file ends when its tests and hooks are done, even if a library
  // (a browser driver, a gRPC channel) keeps a handle open; seen with the console's
  // browser suite beside the container suites, where a file then sat until its limit.
  const args = ['--import', 'tsx', '--test', '--test-force-exit', `--test-concurrency=${concurrency}`, `--test-timeout=${limitMs}`, ...list];
  return run(process.execPath, args, { env });
}
// A container file stopped at its limit leaves its containers behind (its after hook never
// runs): they get 15 minutes against 5 for the others (image.test.ts and kubernetes.test.ts
// ran past 5 at load 60 on 2 cores).
const statuses = [runSuites(otherFiles, 300_000), runSuites(containerFiles, 900_000)];
finish(statuses.find((status) => status !== 0) ?? 0);
