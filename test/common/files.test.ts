import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { withFileLock, writeFileAtomic } from '../../src/common/files.ts';
import { LineWatcher, tempDataDir } from '../helpers/index.ts';

test(
  'a lock holder stopped past the stale time loses its lock: its write is refused with a clear error, the edit of the process that took the lock over stays, and nothing crashes',
  { timeout: 60_000 },
  async (t) => {
    const path = join(await tempDataDir(t), 'shared.txt');
    await writeFile(path, 'start\n');
    const holder = spawn(process.execPath, ['--import', 'tsx', new URL('./fixtures/lock-holder.ts', import.meta.url).pathname, path], {
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
    assert.match(stdout.text, /^refused in one line: the lock on .*shared\.txt was lost \(.*\), so nothing was written/m);
    assert.doesNotMatch(stderr.text, /ECOMPROMISED/);
    assert.equal(await readFile(path, 'utf8'), 'taker\n');
  },
);
