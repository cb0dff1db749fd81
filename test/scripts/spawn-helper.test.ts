/**
 * The spawn helper (src/scripts/spawner.ts): scripts are created by a small
 * process of the server's, which hands their pipes back. Nothing a script
 * prints may be lost in that hand-over, and a helper that dies must neither
 * leave a run hanging nor its script running, and is replaced.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { request } from 'undici';
import { callStream, dataLines, eventually, exitOf, processAlive, startHarness } from './helpers.ts';
import { eventWithin } from '../helpers/index.ts';

const h = await startHarness({ after });
await h.script('burst.sh', '#!/bin/sh\nseq 1 20000\nseq 1 5000 >&2\n');
await h.script('family.sh', '#!/bin/sh\n( sleep 30 & echo "grandchild $!"; wait ) &\necho "script $$"\nwait\n');

/** The spawn helpers this process (the server's) has started and that are still running. */
function helpers(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        return ppid === process.pid && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('spawn-helper.js') && processAlive(Number(pid));
      } catch {
        return false;
      }
    })
    .map(Number);
}

test('R-SCRIPT-5 every line scripts print at once, while the helper hands their pipes over, reaches the client in order', async () => {
  // Eight at once: the server is busy, so the helper waits longer for each hand-over.
  const answers = await Promise.all(Array.from({ length: 8 }, () => callStream(`${h.base}/burst`)));
  for (const answer of answers) {
    const lines = dataLines(answer);
    assert.equal(lines.length, 20000);
    assert.ok(
      lines.every((line, i) => line === String(i + 1)),
      'the lines are 1…20000 in order',
    );
    assert.deepEqual(exitOf(answer), { code: 0, signal: null, reason: 'exited' });
  }
});

test("the Node internal the helper stops reading with is there: a child's pipe handle has readStop() (docs/decisions/007)", async (t) => {
  const child = spawn(process.execPath, ['-e', 'process.stdout.write("x")'], { stdio: ['ignore', 'pipe', 'ignore'] });
  t.after(() => child.kill());
  const handle = (child.stdout as unknown as { _handle?: { readStop?: unknown } })._handle;
  assert.equal(typeof handle?.readStop, 'function', `Node ${process.version} moved it: src/scripts/spawn-helper.js must change before this Node is supported`);
  await eventWithin(child, 'exit', 'the child to exit');
});

test('a spawn helper that dies mid-run ends the run (reason lost), kills its group, and is replaced', async () => {
  const response = await request(`${h.base}/family`);
  const reader = response.body[Symbol.asyncIterator]();
  let text = '';
  while (!/grandchild \d+/.test(text) || !/script \d+/.test(text)) {
    const next = await reader.next();
    assert.ok(!next.done, `the stream ended early: ${text}`);
    text += (next.value as Buffer).toString();
  }
  const script = Number(/script (\d+)/.exec(text)?.[1]);
  const grandchild = Number(/grandchild (\d+)/.exec(text)?.[1]);
  const [helper] = helpers();
  assert.ok(helper, 'a spawn helper runs beside the server');
  process.kill(helper, 'SIGKILL');
  for (;;) {
    const next = await reader.next();
    if (next.done) break;
    text += (next.value as Buffer).toString();
  }
  assert.match(text, /event: exit\n.*\n.*\ndata: \{"code":null,"signal":null,"reason":"lost"\}/);
  await eventually(() => !processAlive(script) && !processAlive(grandchild), 'the script and its grandchild to end');
  const again = await callStream(`${h.base}/burst`);
  assert.equal(dataLines(again).length, 20000);
  assert.notEqual(helpers()[0], helper, 'a new helper serves the next run');
});

test('close() ends the spawn helper with the server', async (t) => {
  const own = await startHarness(t);
  await own.script('one.sh', '#!/bin/sh\necho one\n');
  const before = new Set(helpers());
  assert.deepEqual(dataLines(await callStream(`${own.base}/one`)), ['one']);
  const started = helpers().filter((pid) => !before.has(pid));
  assert.equal(started.length, 1);
  await own.server.close();
  await eventually(() => !processAlive(started[0]!), 'the helper to end');
});
