/**
 * `offcloud env` for components started alone (`offcloud <component>`, as each
 * compose service runs one): each keeps its record in <data-dir>/run/, and
 * `offcloud env` on the same host and data dir prints what their clients need;
 * records of another host (another container on a shared volume) and of gone
 * processes are passed over, and a component's record goes when it stops.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { LineWatcher, tempDataDir } from '../helpers/index.ts';

const BIN = new URL('../../bin/offcloud.js', import.meta.url).pathname;

async function startAlone(dataDir: string, component: string, flags: string[]): Promise<{ child: ChildProcess; stdout: LineWatcher }> {
  const child = spawn(process.execPath, [BIN, component, '--data-dir', dataDir, '--log-level', 'warn', ...flags], { stdio: ['ignore', 'pipe', 'pipe'] });
  const stdout = new LineWatcher(child.stdout!);
  const stderr = new LineWatcher(child.stderr!);
  await stdout.waitFor(/^Every value above as shell variables: eval "\$\(npx offcloud env\)"$/m, 120_000).catch((err: Error) => {
    child.kill('SIGKILL');
    throw new Error(`${err.message}\nstderr:\n${stderr.text.slice(-3000)}`);
  });
  return { child, stdout };
}

async function env(dataDir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return promisify(execFile)(process.execPath, [BIN, 'env', '--data-dir', dataDir]).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}

async function stop(child: ChildProcess): Promise<void> {
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

test('offcloud env prints the values of the components started alone on this host and data dir, and nothing of another host or a gone process', async (t) => {
  const dataDir = await tempDataDir(t);
  // Another container's record on a shared volume, and a record whose process is gone (pid 2^22 + 1: above Linux's pid_max).
  const foreign = { pid: 1, startedAt: new Date(0).toISOString(), host: `not-${hostname()}`, facts: {}, failed: {} };
  const gone = { ...foreign, pid: 4_194_305, host: hostname() };
  await mkdir(join(dataDir, 'run'));
  await writeFile(
    join(dataDir, 'run', 'calculator.elsewhere.1.json'),
    JSON.stringify({ ...foreign, components: { calculator: { urls: [{ label: 'x', url: 'http://elsewhere:1' }] } } }),
  );
  await writeFile(
    join(dataDir, 'run', 'users.gone.json'),
    JSON.stringify({ ...gone, components: { users: { urls: [{ label: 'x', url: 'http://gone:1' }] } } }),
  );
  assert.equal((await env(dataDir)).code, 1, 'no component of this host runs yet');

  const calculator = await startAlone(dataDir, 'calculator', ['--port', '0']);
  t.after(() => calculator.child.kill('SIGKILL'));
  const identity = await startAlone(dataDir, 'identity', ['--port', '0', '--imds-port', '0']);
  t.after(() => identity.child.kill('SIGKILL'));

  const printed = await env(dataDir);
  assert.equal(printed.code, 0, printed.stderr);
  assert.match(printed.stdout, /^# offcloud calculator, pid \d+, started .*; offcloud identity, pid \d+/m);
  const calculatorUrl = /^export CALCULATOR_URL='(http:\/\/127\.0\.0\.1:\d+)'$/m.exec(printed.stdout)?.[1];
  assert.ok(calculatorUrl, printed.stdout);
  assert.equal(await (await fetch(`${calculatorUrl}/add/2/3`)).text(), '5');
  assert.match(printed.stdout, /^export AZURE_AUTHORITY_HOST='https:\/\/127\.0\.0\.1:\d+'$/m);
  assert.match(printed.stdout, /^export CLIENT_ID='[0-9a-f-]{36}'$/m);
  assert.match(printed.stdout, new RegExp(`^export CA='${join(dataDir, 'ca', 'ca.crt')}'$`, 'm'));
  assert.match(printed.stdout, /^# IOTHUB_CONNECTION_STRING: hub is not running$/m);
  assert.doesNotMatch(printed.stdout, /elsewhere|gone:1|USERS_URL/);

  // A stopped component takes its record with it; the other's stays.
  await stop(calculator.child);
  const after = await env(dataDir);
  assert.doesNotMatch(after.stdout, /CALCULATOR_URL/);
  assert.match(after.stdout, /^export CLIENT_ID=/m);
  await stop(identity.child);
  assert.deepEqual((await readdir(join(dataDir, 'run'))).sort(), ['calculator.elsewhere.1.json', 'users.gone.json']);
  const none = await env(dataDir);
  assert.equal(none.code, 1);
  assert.match(none.stderr, /neither offcloud up nor a component runs on the data dir/);
});
