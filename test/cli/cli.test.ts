import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { components } from '../../src/components.ts';
import { LineWatcher, tempDataDir, eventWithin } from '../helpers/index.ts';
import { anyFreePortFlags, assertEveryComponentHealthy } from '../helpers/up.ts';

const BIN = new URL('../../bin/offcloud.js', import.meta.url).pathname;

function offcloud(args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  return { child, stdout: new LineWatcher(child.stdout), stderr: new LineWatcher(child.stderr) };
}

async function exitOf(args: string[], env: NodeJS.ProcessEnv = {}) {
  const run = offcloud(args, env);
  const [code] = await eventWithin<[number]>(run.child, 'exit', 'the command to exit', 60_000);
  return { code, stdout: run.stdout.text, stderr: run.stderr.text };
}

test('CLI: unknown command or option → a clear message and exit code 2', async () => {
  const unknownCommand = await exitOf(['frobnicate']);
  assert.equal(unknownCommand.code, 2);
  assert.match(unknownCommand.stderr, /unknown command "frobnicate"/);
  const unknownOption = await exitOf(['calculator', '--prot', '1']);
  assert.equal(unknownOption.code, 2);
  assert.match(unknownOption.stderr, /unknown option --prot/);
  const unknownUpOption = await exitOf(['up', '--calculater-port', '1']);
  assert.equal(unknownUpOption.code, 2);
});

test('CLI: --help lists every component and each component its options', async () => {
  const help = await exitOf(['--help']);
  assert.equal(help.code, 0);
  for (const c of components) assert.match(help.stdout, new RegExp(`\\b${c.name}\\b`));
  const calculatorHelp = await exitOf(['calculator', '--help']);
  assert.equal(calculatorHelp.code, 0);
  assert.match(calculatorHelp.stdout, /--port .*\[default: 8082\]/);
});

/** Packages only a running server needs (HTTP, MQTT, gRPC, inference, images, registries, ACME, tokens, logging). */
const SERVER_PACKAGES = [
  'fastify',
  'aedes',
  '@grpc/grpc-js',
  'onnxruntime-node',
  'sharp',
  'ioredis',
  'etcd3',
  'multicast-dns',
  'acme-client',
  '@peculiar/x509',
  'jose',
  'undici',
  'pino',
];
const RECORDER = new URL('./record-modules.mjs', import.meta.url).href;

test('CLI: help, usage errors and subcommand lookup load no server module', async (t) => {
  const dir = await tempDataDir(t);
  const cases = [
    { args: ['--help'], code: 0 },
    { args: ['hub', '--help'], code: 0 },
    { args: ['up', '--help'], code: 0 },
    { args: ['calculator', '--prot', '1'], code: 2 },
    { args: ['hub', 'device'], code: 2 },
    { args: ['scoring', 'keys'], code: 2 },
    { args: ['score', '--help'], code: 0 },
    { args: ['billing', 'usage', '--help'], code: 0 },
    { args: ['gateway', 'parse', '--help'], code: 0 },
    { args: ['gateway', 'parse'], code: 2 },
    { args: ['models', 'pull', '--help'], code: 0 },
    { args: ['models', 'train', '--help'], code: 0 },
  ];
  for (const [i, { args, code }] of cases.entries()) {
    const file = join(dir, `modules-${i}.txt`);
    const run = await exitOf(args, { NODE_OPTIONS: `--import ${RECORDER}`, RECORD_MODULES_FILE: file });
    const what = `offcloud ${args.join(' ')}`;
    assert.equal(run.code, code, `${what}: ${run.stderr}`);
    const loaded = await readFile(file, 'utf8');
    // The recorder sees both kinds of module: the CLI's own (ESM) and yaml's files (CommonJS, from require.cache).
    // The compiled dist/ when it is current (bin/offcloud.js), else the sources through tsx.
    assert.match(loaded, /\/(src\/common\/config\.ts|dist\/common\/config\.js)$/m, what);
    assert.match(loaded, /^\/.*\/node_modules\/yaml\/dist\/.*\.js$/m, what);
    const packages = new Set([...loaded.matchAll(/\/node_modules\/((?:@[^/]+\/)?[^/]+)\//g)].map((m) => m[1]));
    assert.deepEqual(
      SERVER_PACKAGES.filter((name) => packages.has(name)),
      [],
      `${what} loads no server package`,
    );
  }
});

test("CLI: a management command's --help prints its usage and runs nothing", async () => {
  for (const [args, usage] of [
    [['billing', 'usage', '--help'], /^usage: offcloud billing usage/],
    [['gateway', 'parse', '--help'], /^usage: offcloud gateway parse <kong\.yml\|kong\.json>/],
    [['scoring', 'keys', 'show', 'imagenet', '--help'], /^usage: offcloud scoring keys/],
    [['models', 'pull', '-h'], /^usage: offcloud models pull/],
    [['models', 'train', '-h'], /^usage: offcloud models train face-hair/],
  ] as const) {
    const run = await exitOf([...args]);
    assert.equal(run.code, 0, `offcloud ${args.join(' ')}: ${run.stderr}`);
    assert.match(run.stdout, usage, `offcloud ${args.join(' ')}`);
  }
});

test('CLI: a bad option value names the key; a taken port names the port and the flag', async (t) => {
  const bad = await exitOf(['calculator', '--port', 'eighty']);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /--port \(OFFCLOUD_CALCULATOR_PORT\)/);

  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  t.after(() => blocker.close());
  const port = (blocker.address() as AddressInfo).port;
  const taken = await exitOf(['calculator', '--port', String(port), '--data-dir', await tempDataDir(t)]);
  assert.equal(taken.code, 1);
  assert.match(taken.stderr, new RegExp(`port ${port} .*already in use.*--port`));
});

test('CLI: offcloud ca prints the CA file and how clients trust it', async (t) => {
  const dataDir = await tempDataDir(t);
  const ca = await exitOf(['ca', '--data-dir', dataDir]);
  assert.equal(ca.code, 0);
  const path = ca.stdout.split('\n')[0]!;
  assert.equal(path, join(dataDir, 'ca', 'ca.crt'));
  assert.match(await readFile(path, 'utf8'), /BEGIN CERTIFICATE/);
  assert.match(ca.stdout, /NODE_EXTRA_CA_CERTS=/);
  assert.match(ca.stdout, /--cacert/);
});

test('CLI: offcloud up starts every component, prints one table, /health answers on each, SIGTERM stops all within 5 s', async (t) => {
  const dataDir = await tempDataDir(t);
  const run = offcloud(['up', '--data-dir', dataDir, '--log-level', 'warn', ...anyFreePortFlags()]);
  t.after(() => run.child.kill('SIGKILL'));
  await run.stdout.waitFor(/^Every value above as shell variables/, 240_000).catch((err: Error) => {
    throw new Error(`${err.message}\nstderr:\n${run.stderr.text.slice(-3000)}`);
  });
  const table = run.stdout.text;
  for (const c of components) assert.match(table, new RegExp(`^${c.name}\\s`, 'm'), `${c.name} is in the table`);
  await assertEveryComponentHealthy(t, dataDir);
  const started = Date.now();
  run.child.kill('SIGTERM');
  const [code] = await eventWithin(run.child, 'exit', 'the command to exit', 60_000);
  assert.equal(code, 0);
  assert.ok(Date.now() - started < 5000, `stopped in ${Date.now() - started} ms`);
});

test('CLI: offcloud env with no up running on the data dir says so and how to start it', async (t) => {
  const env = await exitOf(['env', '--data-dir', await tempDataDir(t)]);
  assert.equal(env.code, 1);
  assert.match(env.stderr, /neither offcloud up nor a component runs on the data dir .*; start them with `npx offcloud up`/);
});
