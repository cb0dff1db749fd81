/**
 * The hub's file store under a lost file lock: a write it hands its worker
 * thread while holding a device file's lock is refused once that lock may have
 * been taken over (the process was blocked past the stale time), and the write
 * of the process that took it over stays.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { withFileLock, writeFileAtomic } from '../../src/common/files.ts';
import { LineWatcher, tempDataDir } from '../helpers/index.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = ['--import', 'tsx', 'src/cli.ts'];

test(
  'a twin write the store hands its worker under a file lock that was lost meanwhile is refused in one line, and the write of the process that took the lock over stays',
  { timeout: 60_000 },
  async (t) => {
    const dataDir = await tempDataDir(t);
    await promisify(execFile)(process.execPath, [...CLI, 'hub', 'device', 'create', 'held', '--data-dir', dataDir], { cwd: ROOT });
    const path = join(dataDir, 'hub', 'identities', `${createHash('sha256').update('held').digest('hex')}.json`);
    const holder = spawn(process.execPath, ['--import', 'tsx', new URL('./store-lock-holder.ts', import.meta.url).pathname, dataDir], {
      stdio: ['pipe', 'pipe', 'pipe'],
      cwd: ROOT,
    });
    t.after(() => holder.kill('SIGKILL'));
    const closed = once(holder, 'close');
    const stdout = new LineWatcher(holder.stdout);
    const stderr = new LineWatcher(holder.stderr);
    await stdout.waitFor(/^locked$/);

    // The holder is blocked inside its lock and refreshes it no more: this takes it over once it is stale.
    await withFileLock(path, async () => {
      const record = JSON.parse(await readFile(path, 'utf8')) as { twin: { tags: object } };
      await writeFileAtomic(path, JSON.stringify({ ...record, twin: { ...record.twin, tags: { by: 'taker' } } }));
    });
    holder.stdin.end('write now\n');

    const [code] = await closed;
    assert.equal(code, 0, stderr.text);
    assert.match(stdout.text, /^refused in one line: the lock on .*\.json was lost \(.*\), so nothing was written/m);
    assert.deepEqual((JSON.parse(await readFile(path, 'utf8')) as { twin: { tags: object } }).twin.tags, { by: 'taker' });
  },
);
