import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { openDirectory } from '../../src/identity/directory/index.ts';
import { openSigningKeys } from '../../src/identity/keys.ts';
import { identityHeaderPath } from '../../src/identity/start.ts';
import { crashRounds, DISK_FULL_LINE, diskFullRound, runOffcloud, startChild } from './harness.ts';

test('crash: identity keeps every acknowledged directory edit and key rotation over kill -9 of the server and the command', async (t) => {
  const identities = { acknowledged: new Set<string>(), started: new Set<string>() };
  const kids = { acknowledged: [] as string[] };
  let next = 0;
  let header: string | undefined;

  await crashRounds(t, {
    rounds: 2,
    maxKillDelayMs: 4000,
    start: (dataDir) => startChild(['identity', '--data-dir', dataDir, '--port', '0', '--imds-port', '0'], /https:\/\/127\.0\.0\.1:\d+/),
    planted: (dataDir) => [openDirectory(dataDir).path, openDirectory(dataDir).demoSecretPath, openSigningKeys(dataDir).path, identityHeaderPath(dataDir)],
    async load(_server, writers, dataDir) {
      // Management commands edit the files one at a time, as a person at a terminal does.
      await writers.run(1, async (_writer, iteration) => {
        if (iteration % 2 === 0) {
          const name = `crash-${next++}`;
          identities.started.add(name);
          await runOffcloud(['identity', 'identity', 'create', '--name', name, '--data-dir', dataDir], writers.signal);
          identities.acknowledged.add(name);
        } else {
          const printed = await runOffcloud(['identity', 'keys', 'rotate', '--data-dir', dataDir], writers.signal);
          kids.acknowledged.push(/new kid: (\S+)/.exec(printed)![1]!);
        }
      });
    },
    async check(_server, round, dataDir) {
      const directory = await openDirectory(dataDir).current();
      const names = directory.managedIdentities.filter((m) => m.kind === 'user').map((m) => m.name);
      assert.equal(new Set(names).size, names.length, `round ${round}: each identity once`);
      for (const name of identities.acknowledged) assert.ok(names.includes(name), `round ${round}: acknowledged identity ${name} is there`);
      for (const name of names) assert.ok(identities.started.has(name), `round ${round}: only identities that were made`);
      const published = (await openSigningKeys(dataDir).current()).jwks.keys.map((k) => k.kid);
      for (const kid of kids.acknowledged) assert.ok(published.includes(kid), `round ${round}: rotated key ${kid} is published`);
      // The App Service header secret is made once per data dir: every restart keeps it.
      const current = await readFile(identityHeaderPath(dataDir), 'utf8');
      header ??= current;
      assert.equal(current, header, `round ${round}: the identity header is the one made first`);
    },
  });
});

test('disk full: identity management commands refuse in one line while the disk is full and keep nothing they refused; acknowledged edits stay over restarts', async (t) => {
  const identities = { acknowledged: new Set<string>(), refused: new Set<string>() };
  let next = 0;

  await diskFullRound(t, {
    start: (dataDir) => startChild(['identity', '--data-dir', dataDir, '--port', '0', '--imds-port', '0'], /https:\/\/127\.0\.0\.1:\d+/),
    async load(_server, writers, dataDir) {
      await writers.run(1, async () => {
        const name = `full-${next++}`;
        try {
          await runOffcloud(['identity', 'identity', 'create', '--name', name, '--data-dir', dataDir], writers.signal);
        } catch (err) {
          const stderr = /exited 1: ([\s\S]*)$/.exec((err as Error).message)?.[1] ?? '';
          assert.match(stderr.trim(), DISK_FULL_LINE, (err as Error).message);
          identities.refused.add(name);
          writers.refused();
          return;
        }
        identities.acknowledged.add(name);
      });
    },
    async check(_server, stage, dataDir) {
      const names = (await openDirectory(dataDir).current()).managedIdentities.filter((m) => m.kind === 'user').map((m) => m.name);
      for (const name of identities.acknowledged) assert.ok(names.includes(name), `${stage}: acknowledged identity ${name} is there`);
      for (const name of identities.refused) assert.ok(!names.includes(name), `${stage}: refused identity ${name} is not there`);
    },
  });
});
