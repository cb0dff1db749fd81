import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { offcloudAtOnce, tempDataDir } from '../helpers/index.ts';
import { devicesCommands } from '../../src/devices/commands.ts';
import { deviceFilePath } from '../../src/devices/store.ts';
import { UsageError } from '../../src/common/errors.ts';
import { DeviceStoreError } from '../../src/devices/errors.ts';
import { lifo } from './helpers.ts';

const execFileAsync = promisify(execFile);

async function run(command: keyof typeof devicesCommands.subcommands, args: string[]): Promise<string> {
  let printed = '';
  const code = await devicesCommands.subcommands[command].runTo(args, { write: (text: string) => (printed += text) });
  assert.equal(code, 0);
  return printed;
}

test('R-DEV-4 devices add, set-active, remove and list edit the stored records (our choice: §3 shows no transitions)', async (context) => {
  const t = lifo(context);
  const dataDir = await tempDataDir(t);
  const dir = ['--data-dir', dataDir];
  assert.match(await run('list', dir), /sensor-1\s+true\n.*sensor-2\s+false/s);
  assert.equal(await run('add', ['lamp-9', ...dir]), 'lamp-9 active=true\n');
  assert.equal(await run('add', ['door-3', '--inactive', ...dir]), 'door-3 active=false\n');
  assert.equal(await run('set-active', ['lamp-9', 'false', ...dir]), 'lamp-9 active=false\n');
  assert.equal(await run('remove', ['sensor-2', ...dir]), 'removed sensor-2\n');
  const stored = JSON.parse(await readFile(deviceFilePath(dataDir), 'utf8')) as { devices: Array<{ name: string; active: boolean }> };
  assert.deepEqual(stored.devices, [
    { name: 'sensor-1', active: true },
    { name: 'camera-1', active: true },
    { name: 'lamp-9', active: false },
    { name: 'door-3', active: false },
  ]);
});

test('fuzz: devices commands refuse bad names, flags and arguments without touching the file', async (context) => {
  const t = lifo(context);
  const dataDir = await tempDataDir(t);
  const dir = ['--data-dir', dataDir];
  await run('list', dir);
  const before = await readFile(deviceFilePath(dataDir), 'utf8');
  const bad: Array<[keyof typeof devicesCommands.subcommands, string[]]> = [
    ['add', ['a/b', ...dir]],
    ['add', ['x'.repeat(10_240), ...dir]],
    ['add', ['nul\u0000', ...dir]],
    ['add', [...dir]],
    ['add', ['ok', '--bogus', ...dir]],
    ['set-active', ['sensor-1', 'yes', ...dir]],
    ['set-active', ['nobody', 'true', ...dir]],
    ['remove', ['nobody', ...dir]],
    ['list', ['extra', ...dir]],
  ];
  for (const [command, args] of bad) {
    await assert.rejects(devicesCommands.subcommands[command].runTo(args, { write: () => undefined }), UsageError, `${command} ${args[0]?.slice(0, 20)}`);
  }
  assert.equal(await readFile(deviceFilePath(dataDir), 'utf8'), before);
  // A hand-broken file is reported in one line, not overwritten.
  await writeFile(deviceFilePath(dataDir), '{"devices": [{"name": 1}]}');
  await assert.rejects(run('list', dir), DeviceStoreError);
});

test('R-DEV-4 `offcloud devices` through the CLI binary: list and a usage error with exit code 2', async (context) => {
  const t = lifo(context);
  const dataDir = await tempDataDir(t);
  const cli = ['--import', 'tsx', 'src/cli.ts', 'devices'];
  const listed = await execFileAsync(process.execPath, [...cli, 'list', '--data-dir', dataDir]);
  assert.match(listed.stdout, /^name\s+active\n/);
  const refused = await execFileAsync(process.execPath, [...cli, 'set-active', 'sensor-1', 'maybe', '--data-dir', dataDir]).then(
    () => assert.fail('accepted "maybe"'),
    (err: { code: number; stderr: string }) => err,
  );
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /^offcloud: expected true or false, got "maybe"/);
});

test('R-DEV-4 `offcloud devices add` run by 8 processes at once on one data dir: every device is stored (the file is edited under its lock)', async (context) => {
  const t = lifo(context);
  const dataDir = await tempDataDir(t);
  const names = Array.from({ length: 8 }, (_, i) => `edit-${i}`);
  // On a fresh data dir: the first to come seeds the file, and no edit is lost to the seed either.
  const printed = await offcloudAtOnce(names.map((name) => ['devices', 'add', name, '--data-dir', dataDir]));
  assert.deepEqual(
    printed,
    names.map((name) => `${name} active=true\n`),
  );
  const stored = JSON.parse(await readFile(deviceFilePath(dataDir), 'utf8')) as { devices: Array<{ name: string }> };
  assert.deepEqual(stored.devices.map((d) => d.name).sort(), [...names, 'camera-1', 'sensor-1', 'sensor-2'].sort());
  assert.deepEqual(await readdir(dirname(deviceFilePath(dataDir))), ['devices.json'], 'no lock or temporary file left');
});
