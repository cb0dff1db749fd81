import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deviceFilePath, readDevices } from '../../src/devices/store.ts';
import { crashRounds, DISK_FULL_LINE, diskFullRound, runOffcloud, startChild } from './harness.ts';

test('crash: the device store keeps every acknowledged device edit over kill -9 of DevSvc and the command', async (t) => {
  const acknowledged = new Map<string, boolean>();
  const started = new Set<string>();
  let next = 0;

  await crashRounds(t, {
    rounds: 2,
    maxKillDelayMs: 4000,
    start: (dataDir) => startChild(['devsvc', '--data-dir', dataDir, '--registry', 'static'], /grpc:\/\/127\.0\.0\.1:\d+/),
    planted: (dataDir) => [deviceFilePath(dataDir)],
    async load(_server, writers, dataDir) {
      // `offcloud devices add` edits the file one command at a time, as a person at a terminal does.
      await writers.run(1, async () => {
        const name = `crash-${next++}`;
        const active = next % 2 === 0;
        started.add(name);
        await runOffcloud(['devices', 'add', name, ...(active ? [] : ['--inactive']), '--data-dir', dataDir], writers.signal);
        acknowledged.set(name, active);
      });
    },
    async check(_server, round, dataDir) {
      const devices = await readDevices(deviceFilePath(dataDir), false);
      const names = devices.map((d) => d.name);
      assert.equal(new Set(names).size, names.length, `round ${round}: each device once`);
      for (const [name, active] of acknowledged) {
        assert.equal(devices.find((d) => d.name === name)?.active, active, `round ${round}: acknowledged device ${name} is there, active=${active}`);
      }
      for (const name of names) assert.ok(started.has(name) || /^(sensor|camera)-\d$/.test(name), `round ${round}: only devices that were added`);
    },
  });
});

test('disk full: `offcloud devices add` refuses in one line while the disk is full and keeps nothing it refused; acknowledged devices stay over restarts', async (t) => {
  const devices = { acknowledged: new Set<string>(), refused: new Set<string>() };
  let next = 0;

  await diskFullRound(t, {
    start: (dataDir) => startChild(['devsvc', '--data-dir', dataDir, '--registry', 'static'], /grpc:\/\/127\.0\.0\.1:\d+/),
    async load(_server, writers, dataDir) {
      await writers.run(1, async () => {
        const name = `full-${next++}`;
        try {
          await runOffcloud(['devices', 'add', name, '--data-dir', dataDir], writers.signal);
        } catch (err) {
          const stderr = /exited 1: ([\s\S]*)$/.exec((err as Error).message)?.[1] ?? '';
          assert.match(stderr.trim(), DISK_FULL_LINE, (err as Error).message);
          devices.refused.add(name);
          writers.refused();
          return;
        }
        devices.acknowledged.add(name);
      });
    },
    async check(_server, stage, dataDir) {
      const names = (await readDevices(deviceFilePath(dataDir), false)).map((d) => d.name);
      for (const name of devices.acknowledged) assert.ok(names.includes(name), `${stage}: acknowledged device ${name} is there`);
      for (const name of devices.refused) assert.ok(!names.includes(name), `${stage}: refused device ${name} is not there`);
    },
  });
});
