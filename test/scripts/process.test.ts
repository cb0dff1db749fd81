import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { request } from 'undici';
import { callStream, eventually, exitOf, processAlive, startHarness } from './helpers.ts';

const h = await startHarness({ after });
// The script starts a subshell that starts `sleep`: the sleep is the script's grandchild.
const FAMILY = '( sleep 30 & echo "grandchild $!"; wait ) &\necho "script $$"\nwait\n';
await h.script('stuck.sh', `#!/bin/sh\n# offcloud: timeout=500ms\n${FAMILY}`);
await h.script('lingers.sh', `#!/bin/sh\n${FAMILY}`);
await h.script('single.sh', '#!/bin/sh\n# offcloud: concurrency=1 timeout=20s\necho started\nsleep 20\n');
await h.script('flood.sh', `#!/bin/sh\nyes '${'0123456789'.repeat(10)}'\n`);

/** Opens a stream and returns once the script has printed its family's pids. */
async function openFamily(url: string) {
  const controller = new AbortController();
  const response = await request(url, { signal: controller.signal });
  // Read by hand: leaving a for-await loop would close the stream (a disconnect).
  const reader = response.body[Symbol.asyncIterator]();
  let text = '';
  while (!/grandchild \d+/.test(text) || !/script \d+/.test(text)) {
    const next = await reader.next();
    if (next.done) break;
    text += (next.value as Buffer).toString();
  }
  return {
    response,
    controller,
    grandchild: Number(/grandchild (\d+)/.exec(text)?.[1]),
    script: Number(/script (\d+)/.exec(text)?.[1]),
  };
}

test('R-SCRIPT-5 a timeout kills the script and its whole process group (the sleep grandchild too)', async () => {
  const answer = await callStream(`${h.base}/stuck`);
  const grandchild = Number(/grandchild (\d+)/.exec(answer.body)?.[1]);
  assert.ok(grandchild > 0, answer.body);
  const exit = exitOf(answer);
  assert.equal(exit.reason, 'timeout');
  assert.equal(exit.signal, 'SIGTERM');
  await eventually(() => !processAlive(grandchild), `grandchild ${grandchild} to end`);
});

test('R-SCRIPT-5 a client that disconnects takes the script and its children down', async () => {
  const family = await openFamily(`${h.base}/lingers`);
  assert.ok(processAlive(family.script) && processAlive(family.grandchild));
  family.controller.abort();
  await eventually(() => !processAlive(family.script), `script ${family.script} to end`);
  await eventually(() => !processAlive(family.grandchild), `grandchild ${family.grandchild} to end`);
});

test('R-SCRIPT-5 a per-script concurrency limit answers 429 with Retry-After', async () => {
  const controller = new AbortController();
  const first = await request(`${h.base}/single`, { signal: controller.signal });
  const reader = first.body[Symbol.asyncIterator]();
  assert.match(((await reader.next()).value as Buffer).toString(), /data: started/);
  const second = await request(`${h.base}/single`);
  assert.equal(second.statusCode, 429);
  assert.equal(second.headers['retry-after'], '1');
  assert.equal(((await second.body.json()) as { error: { code: string } }).error.code, 'ScriptBusy');
  controller.abort();
  // Once the first run has been killed, the slot is free again (the client cannot see that moment, so it retries).
  const deadline = Date.now() + 5000;
  let third = await request(`${h.base}/single`);
  while (third.statusCode === 429 && Date.now() < deadline) {
    await third.body.dump();
    await new Promise((resolve) => setTimeout(resolve, 50));
    third = await request(`${h.base}/single`);
  }
  assert.equal(third.statusCode, 200);
  third.body.destroy();
});

test('R-SCRIPT-5 the global limit answers 503 with Retry-After; close() stops running scripts', async (t) => {
  const small = await startHarness(t, { maxRunning: 1 });
  await small.script('wait.sh', `#!/bin/sh\n${FAMILY}`);
  await small.script('other.sh', '#!/bin/sh\necho other\n');
  const family = await openFamily(`${small.base}/wait`);
  const busy = await request(`${small.base}/other`);
  assert.equal(busy.statusCode, 503);
  assert.equal(busy.headers['retry-after'], '1');
  assert.equal(((await busy.body.json()) as { error: { code: string } }).error.code, 'ServerBusy');
  await small.server.close();
  await eventually(() => !processAlive(family.grandchild), 'the grandchild to end at close');
});

test('R-SCRIPT-5 a script printing without end, to a client that does not read, holds memory bounded', async () => {
  const controller = new AbortController();
  const response = await request(`${h.base}/flood`, { signal: controller.signal });
  const reader = response.body[Symbol.asyncIterator]();
  await reader.next();
  const before = process.memoryUsage().rss;
  // Unread for half a second: `yes` alone would produce hundreds of MB in that time.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const grown = process.memoryUsage().rss - before;
  controller.abort();
  assert.ok(grown < 64 * 1024 * 1024, `server grew by ${Math.round(grown / 1024 / 1024)} MB`);
});
