import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { withFileLock, writeFileAtomic } from '../../src/common/files.ts';
import { LineWatcher, tempDataDir } from '../helpers/index.ts';

/**
 * A holder of the lock on `path` is stopped past the stale time; this process takes the lock
 * over and writes "taker", then the holder, resumed, tries its `mode` (write or remove).
 * Resolves with the holder's output once it has ended.
 */
async function loseLockThen(t: TestContext, path: string, mode: 'write' | 'remove'): Promise<string> {
  const holder = spawn(process.execPath, ['--import', 'tsx', new URL('./fixtures/lock-holder.ts', import.meta.url).pathname, path, mode], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  t.after(() => holder.kill('SIGKILL'));
  // 'close': after its output was read to the end.
  const closed = once(holder, 'close');
  const stdout = new LineWatcher(holder.stdout);
  const stderr = new LineWatcher(holder.stderr);
  await stdout.waitFor(/^locked$/);

  holder.kill('SIGSTOP');
  // This waits while the stopped holder's lock is fresh, and takes it over once it is stale.
  await withFileLock(path, () => writeFileAtomic(path, 'taker\n'));
  holder.kill('SIGCONT');
  holder.stdin.end('write now\n');

  const [code] = await closed;
  assert.equal(code, 0, stderr.text);
  assert.doesNotMatch(stderr.text, /ECOMPROMISED/);
  return stdout.text;
}

test(
  'a lock holder stopped past the stale time loses its lock: its write or delete is refused with a clear error, the edit of the process that took the lock over stays, and nothing crashes',
  { timeout: 60_000 },
  async (t) => {
    const dir = await tempDataDir(t);
    const written = join(dir, 'written.txt');
    const removed = join(dir, 'removed.txt');
    await Promise.all([writeFile(written, 'start\n'), writeFile(removed, 'start\n')]);
    // Side by side: each waits out the stale time once.
    const [writer, remover] = await Promise.all([loseLockThen(t, written, 'write'), loseLockThen(t, removed, 'remove')]);

    assert.match(writer, /^refused in one line: the lock on .*written\.txt was lost \(.*\), so nothing was written/m);
    assert.match(remover, /^refused in one line: the lock on .*removed\.txt was lost \(.*\), so nothing was written/m);
    assert.equal(await readFile(written, 'utf8'), 'taker\n');
    assert.equal(await readFile(removed, 'utf8'), 'taker\n');
  },
);
