/**
 * The one append-only log (billing's usage reports, storage's blob index changes): what a
 * crash or a refused write left is never read back as an entry, and never stops the log
 * from opening.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppendLog } from '../../src/common/append-log.ts';
import { tempDataDir } from '../helpers/index.ts';

test('append log: a new log appears with its first line; entries come back in order, each a whole flushed line', async (t) => {
  const path = join(await tempDataDir(t), 'changes.log');
  const log = AppendLog.empty(path, 0o600);
  await assert.rejects(stat(path), /ENOENT/, 'no file before the first line');
  await log.append({ put: 'a' });
  await log.append({ delete: 'a' });
  assert.equal((await stat(path)).mode & 0o777, 0o600);
  assert.equal(await readFile(path, 'utf8'), '{"put":"a"}\n{"delete":"a"}\n');
  const { log: reopened, entries } = await AppendLog.open(path);
  assert.deepEqual(entries, [{ put: 'a' }, { delete: 'a' }]);
  assert.equal(reopened.bytes, Buffer.byteLength('{"put":"a"}\n{"delete":"a"}\n'));
});

test('append log: a last line a crash cut short is cut off the file, and the next line goes where it was', async (t) => {
  const path = join(await tempDataDir(t), 'usage.jsonl');
  await writeFile(path, '{"n":1}\n{"n":2,"meters":[{"na');
  const { log, entries } = await AppendLog.open(path);
  assert.deepEqual(entries, [{ n: 1 }]);
  assert.equal(await readFile(path, 'utf8'), '{"n":1}\n', 'the torn line is gone from the file');
  await log.append({ n: 3 });
  assert.deepEqual((await AppendLog.open(path)).entries, [{ n: 1 }, { n: 3 }]);
});

test('append log: a whole line that is not JSON (left by a refused write) is skipped, not fatal', async (t) => {
  const path = join(await tempDataDir(t), 'usage.jsonl');
  await writeFile(path, '{"n":1}\n":[{"name":"x"}]}\n{"n":2}\n');
  const { log, entries } = await AppendLog.open(path);
  assert.deepEqual(entries, [{ n: 1 }, { n: 2 }]);
  await log.append({ n: 3 });
  assert.deepEqual((await AppendLog.open(path)).entries, [{ n: 1 }, { n: 2 }, { n: 3 }]);
});

test('append log: clear empties it durably; a missing file opens as an empty log', async (t) => {
  const dir = await tempDataDir(t);
  const path = join(dir, 'blobs.log');
  const { log, entries } = await AppendLog.open(path);
  assert.deepEqual(entries, []);
  await log.append({ put: 'x' });
  await log.clear();
  assert.equal(log.bytes, 0);
  assert.equal(await readFile(path, 'utf8'), '');
  await log.append({ put: 'y' });
  await appendFile(path, '{"torn');
  assert.deepEqual((await AppendLog.open(path)).entries, [{ put: 'y' }]);
});
