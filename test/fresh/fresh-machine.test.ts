/**
 * A fresh machine: the package as a user gets it (`npm pack`, unpacked into a
 * temporary folder with no ../shared anywhere above it, its dependencies the
 * project's node_modules; it runs the JavaScript its prepack compiled), started the way the README says (`npx offcloud up`,
 * here on free ports). Every component answers, every shell block of the
 * README runs as pasted against it, and SIGTERM to npx's PID leaves no server
 * behind. Then the same package with one model file removed: up starts the
 * rest and names the missing file and the command that fixes it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, rmSync } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Metadata } from '@grpc/grpc-js';
import { request } from 'undici';
import { PACKAGE_ROOT } from '../../src/common/models.ts';
import { components } from '../../src/components.ts';
import { devSvcClient } from '../../src/devices/proto.ts';
import { FACE_DETECTOR } from '../../src/models/catalogue.ts';
import { debianProgram, LineWatcher, tempDataDir, eventWithin } from '../helpers/index.ts';
import { anyFreePortFlags, assertEveryComponentHealthy, linesTooWide, upState } from '../helpers/up.ts';
import { portrait } from '../face/images.ts';
import { PACK_DIR, packedTarball, packInto } from './pack.ts';

const run = promisify(execFile);
// Generous: the whole suite shares two cores, and up loads every model.
const START_TIMEOUT_MS = 420_000;

let packed: Promise<string> | undefined;

/**
 * The tarball test/fresh/setup.ts made for this run (`npm run` gives each run its own TMPDIR),
 * or, for a file run alone, `npm pack` now; removed when the file ends.
 */
function packOnce(t: { diagnostic(message: string): void }): Promise<string> {
  packed ??= (async () => {
    process.once('exit', () => rmSync(PACK_DIR, { recursive: true, force: true }));
    const tarball = (await packedTarball()) ?? (await packInto(PACK_DIR));
    t.diagnostic(`npm pack: ${(await stat(tarball)).size} bytes`);
    return tarball;
  })();
  return packed;
}

/** The tarball unpacked as <app>/node_modules/offcloud with the project's dependencies and a .bin link, as npm installs it. */
async function installFromTarball(t: { after(fn: () => unknown): void; diagnostic(message: string): void }): Promise<string> {
  const tarball = await packOnce(t);
  const app = join(await tempDataDir(t), 'app');
  await mkdir(join(app, 'node_modules', '.bin'), { recursive: true });
  await run('tar', ['-xzf', tarball, '-C', join(app, 'node_modules')]);
  const installed = join(app, 'node_modules', 'offcloud');
  await rename(join(app, 'node_modules', 'package'), installed);
  // The package runs its compiled JavaScript: no TypeScript sources travel in it.
  assert.ok(existsSync(join(installed, 'dist', 'cli.js')) && !existsSync(join(installed, 'src')), 'the package holds dist/, not src/');
  await symlink(resolve(PACKAGE_ROOT, 'node_modules'), join(installed, 'node_modules'));
  await symlink('../offcloud/bin/offcloud.js', join(app, 'node_modules', '.bin', 'offcloud'));
  await writeFile(join(app, 'photo.jpg'), await portrait());
  return app;
}

/** `npx offcloud up` in the app folder, data dir ./.offcloud as the README has it; resolves once the table is printed. */
async function startUp(t: { after(fn: () => unknown): void }, app: string, extra: string[] = []) {
  const npx = spawn('npx', ['offcloud', 'up', '--log-level', 'warn', ...anyFreePortFlags(), ...extra], { cwd: app, stdio: ['ignore', 'pipe', 'pipe'] });
  const stdout = new LineWatcher(npx.stdout);
  const stderr = new LineWatcher(npx.stderr);
  const exited = once(npx, 'exit');
  t.after(() => npx.kill('SIGKILL'));
  await Promise.race([
    stdout.waitFor(/^CA file/, START_TIMEOUT_MS),
    exited.then(([code]) => Promise.reject(new Error(`npx offcloud up exited with ${String(code)} before its table:\n${stderr.text.slice(-3000)}`))),
  ]);
  const state = JSON.parse(await readFile(join(app, '.offcloud', 'up.json'), 'utf8')) as { pid: number };
  // The server is npx's grandchild: make sure it goes even if the test fails before its own SIGTERM.
  t.after(() => {
    try {
      process.kill(state.pid, 'SIGKILL');
    } catch {
      // gone already
    }
  });
  return { npx, exited, table: stdout.text, serverPid: state.pid, stderr };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The README's ```sh blocks that talk to a running `up`: all but the first (the
 * install-and-start one this test did), up to the Containers section, whose
 * blocks build and run images (test/containers runs those commands).
 */
async function readmeBlocks(): Promise<string[]> {
  const whole = await readFile(join(PACKAGE_ROOT, 'README.md'), 'utf8');
  const containers = whole.indexOf('\n## Containers\n');
  assert.ok(containers > 0, 'the README has its Containers section');
  const readme = whole.slice(0, containers);
  const blocks = [...readme.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  assert.match(blocks[0]!, /npx offcloud up/);
  return blocks.slice(1);
}

test(
  'fresh machine: the packed package starts all components with npx offcloud up; every README block runs; SIGTERM to npx leaves no server',
  { timeout: 900_000 },
  async (t) => {
    debianProgram('mosquitto-clients', '/usr/bin/mosquitto_pub');
    const app = await installFromTarball(t);
    const up = await startUp(t, app);
    for (const c of components) assert.match(up.table, new RegExp(`^${c.name}\\s`, 'm'), `${c.name} is in the table`);
    assert.doesNotMatch(up.table, /NOT STARTED/);
    assert.deepEqual(linesTooWide(up.table), [], 'the table fits 100 columns, but for values alone on their lines');

    await assertEveryComponentHealthy(t, join(app, '.offcloud'));
    // The gRPC listener answers a DevSvc call (MQTT: the README's mosquitto_pub block below).
    const client = devSvcClient((await upState(join(app, '.offcloud'))).facts.devsvc!.address);
    const device = await new Promise<unknown>((done, fail) =>
      client.Get({ name: 'sensor-1' }, new Metadata(), { deadline: Date.now() + 20_000 }, (err, answer) => (err ? fail(err) : done(answer))),
    );
    client.close();
    assert.ok(device && typeof device === 'object' && 'active' in device);

    // Each block as pasted, in the app folder; curl fails on any answer outside 2xx.
    for (const [i, block] of (await readmeBlocks()).entries()) {
      const script = `set -euo pipefail\ncurl() { command curl --fail-with-body --max-time 60 "$@"; }\n${block}`;
      const result = spawnSync('bash', ['-c', script], { cwd: app, encoding: 'utf8', timeout: 180_000 });
      assert.equal(
        result.status,
        0,
        `README shell block ${i + 2} failed (exit ${result.status}):\n${block}\nstdout: ${result.stdout.slice(-1500)}\nstderr: ${result.stderr.slice(-1500)}`,
      );
    }

    // SIGTERM to the npx process (npm) itself: the server notices its parent is gone and closes.
    up.npx.kill('SIGTERM');
    await up.exited;
    for (let waited = 0; alive(up.serverPid) && waited < 30_000; waited += 200) await new Promise((done) => setTimeout(done, 200));
    assert.equal(alive(up.serverPid), false, `the server (pid ${up.serverPid}) is gone after SIGTERM to npx (pid ${up.npx.pid})`);
    assert.equal(existsSync(join(app, '.offcloud', 'up.json')), false, 'a clean close removes up.json');
  },
);

test('fresh machine: with a model file missing, up starts the rest and names the file and the fix; --strict exits 1', { timeout: 900_000 }, async (t) => {
  const app = await installFromTarball(t);
  await rm(join(app, 'node_modules', 'offcloud', 'models', FACE_DETECTOR.relativePath));
  const up = await startUp(t, app);
  const faceBlock = up.table.slice(up.table.search(/^face\s/m));
  assert.match(faceBlock, /^face\s+NOT STARTED/);
  assert.match(
    faceBlock.replace(/\s*\n\s*/g, ' '),
    /reason: model face-ultralight-rfb\/version-RFB-640\.onnx not found .*fix: offcloud models pull face-ultralight-rfb, then start again/,
  );
  for (const c of components.filter((c) => c.name !== 'face')) assert.match(up.table, new RegExp(`^${c.name}\\s+(?!NOT STARTED)`, 'm'), `${c.name} started`);
  const calculator = (await upState(join(app, '.offcloud'))).facts.calculator!.url;
  assert.equal((await request(`${calculator}/add/2/3`)).statusCode, 200);
  up.npx.kill('SIGTERM');
  await up.exited;

  const strict = spawn('npx', ['offcloud', 'up', '--strict', '--log-level', 'warn', '--data-dir', join(app, 'strict'), ...anyFreePortFlags()], {
    cwd: app,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => strict.kill('SIGKILL'));
  const stderr = new LineWatcher(strict.stderr);
  const [code] = await eventWithin(strict, 'exit', '`offcloud up --strict` to exit', 240_000);
  assert.equal(code, 1, stderr.text);
  assert.match(stderr.text, /version-RFB-640\.onnx not found/);
});
