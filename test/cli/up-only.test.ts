/**
 * `offcloud up --only`: a real `up` process starts the components named and
 * the ones they need, nothing else; a name that is no component is refused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { components, upNeeds } from '../../src/components.ts';
import { kebab } from '../../src/common/config.ts';
import { selectComponents } from '../../src/up/only.ts';
import { freePort, LineWatcher, tempDataDir, eventWithin } from '../helpers/index.ts';
import { portOptionKeys } from '../helpers/up.ts';

const BIN = new URL('../../bin/offcloud.js', import.meta.url).pathname;
const NAMES = components.map((c) => c.name);

function offcloud(args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  return { child, stdout: new LineWatcher(child.stdout), stderr: new LineWatcher(child.stderr) };
}

/** The error a TCP connection to 127.0.0.1:port ends with, or 'connected'. */
function connectOutcome(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

test('up --only: every need is a component that up starts before the one needing it', () => {
  for (const [dependent, needs] of Object.entries(upNeeds)) {
    assert.ok(NAMES.includes(dependent), `${dependent} is a component`);
    for (const needed of Object.keys(needs)) {
      assert.ok(NAMES.includes(needed), `${needed} (needed by ${dependent}) is a component`);
      assert.ok(NAMES.indexOf(needed) < NAMES.indexOf(dependent), `${needed} starts before ${dependent}`);
    }
  }
});

test('up --only: the needs of the chosen components are added, in start order, each saying what it is started for', () => {
  const { components: chosen, neededFor } = selectComponents(components, upNeeds, ['sentiment', 'gateway', 'face']);
  assert.deepEqual(
    chosen.map((c) => c.name),
    ['calculator', 'users', 'gateway', 'billing', 'sentiment', 'face'],
  );
  assert.deepEqual([...neededFor.keys()].sort(), ['billing', 'calculator', 'users']);
  assert.deepEqual(
    neededFor.get('billing')!.map((line) => line.split(':')[0]),
    ['sentiment', 'face'],
  );
  // A need that was also named is not listed as added.
  assert.equal(selectComponents(components, upNeeds, ['storage', 'identity']).neededFor.size, 0);
  assert.equal(selectComponents(components, upNeeds, []).components.length, components.length);
});

test('up --only calculator,storage starts those and identity (for bearer tokens); the other ports are not listening; env lists only them', async (t) => {
  const dataDir = await tempDataDir(t);
  const chosen = new Set(['calculator', 'storage', 'identity']);
  // Chosen components on any free port; every other component told a port that was free, so that its absence can be checked.
  const flags: string[] = [];
  const othersPorts: { name: string; port: number }[] = [];
  for (const c of components) {
    for (const key of portOptionKeys(c.options)) {
      const port = chosen.has(c.name) ? 0 : await freePort();
      if (port) othersPorts.push({ name: `${c.name} --${kebab(key)}`, port });
      flags.push(`--${c.name}-${kebab(key)}`, String(port));
    }
  }
  const run = offcloud(['up', '--only', 'calculator,storage', '--data-dir', dataDir, '--log-level', 'warn', ...flags]);
  t.after(() => run.child.kill('SIGKILL'));
  await run.stdout.waitFor(/^Every value above as shell variables/, 120_000).catch((err: Error) => {
    throw new Error(`${err.message}\nstderr:\n${run.stderr.text.slice(-3000)}`);
  });
  const table = run.stdout.text;
  const rows = [...table.matchAll(/^([a-z][a-z-]*)\s/gm)].map((m) => m[1]).filter((name) => name !== 'component');
  assert.deepEqual(rows, ['calculator', 'identity', 'storage']);
  assert.match(table, /^\s+· not in --only; started for storage: bearer tokens \(§4\.10\)$/m);
  assert.doesNotMatch(table, /NOT STARTED/);

  const state = JSON.parse(await readFile(join(dataDir, 'up.json'), 'utf8')) as { components: Record<string, { urls: { url: string }[] }> };
  assert.deepEqual(Object.keys(state.components), ['calculator', 'identity', 'storage']);
  const calculator = new URL(state.components.calculator!.urls[0]!.url).origin;
  assert.equal(await (await fetch(`${calculator}/add/20/22`)).text(), '42');
  for (const { name, port } of othersPorts) assert.equal(await connectOutcome(port), 'ECONNREFUSED', `${name} ${port}`);

  const env = offcloud(['env', '--data-dir', dataDir]);
  const [code] = await eventWithin<[number]>(env.child, 'exit', '`offcloud env` to exit', 60_000);
  assert.equal(code, 0, env.stderr.text);
  const urlVariables = [...env.stdout.text.matchAll(/^export (\w+_URL)=/gm)].map((m) => m[1]);
  assert.deepEqual(urlVariables, ['CALCULATOR_URL', 'IDENTITY_URL', 'STORAGE_URL', 'IMDS_URL']);
  assert.match(env.stdout.text, /^export TOKEN='ey/m);
  assert.match(env.stdout.text, /^# DEMO_KEY: gateway is not running$/m);

  run.child.kill('SIGTERM');
  assert.deepEqual(await eventWithin(run.child, 'exit', 'the command to exit', 60_000), [0, null]);
});

test('up --only with a name that is no component: refused with the list of components, exit 2, nothing started (flag and OFFCLOUD_ONLY)', async (t) => {
  const dataDir = await tempDataDir(t);
  for (const [args, env] of [
    [['--only', 'calculator,storge'], {}],
    [[], { OFFCLOUD_ONLY: 'calculator, storge' }],
  ] as const) {
    const run = offcloud(['up', '--data-dir', dataDir, ...args], env);
    const [code] = await eventWithin<[number]>(run.child, 'exit', 'the command to exit', 60_000);
    assert.equal(code, 2, `${args.join(' ')} ${JSON.stringify(env)}`);
    assert.equal(run.stdout.text, '');
    assert.equal(run.stderr.text, `offcloud: --only (OFFCLOUD_ONLY): unknown component "storge"; the components are ${NAMES.join(', ')}`);
  }
});

test('up with OFFCLOUD_ONLY set starts what it names, as the image reads it', async (t) => {
  const dataDir = await tempDataDir(t);
  const run = offcloud(['up', '--data-dir', dataDir, '--log-level', 'warn', '--calculator-port', '0'], { OFFCLOUD_ONLY: 'calculator' });
  t.after(() => run.child.kill('SIGKILL'));
  await run.stdout.waitFor(/^Every value above as shell variables/, 60_000);
  assert.deepEqual(
    [...run.stdout.text.matchAll(/^([a-z][a-z-]*)\s/gm)].map((m) => m[1]),
    ['component', 'calculator'],
  );
});
