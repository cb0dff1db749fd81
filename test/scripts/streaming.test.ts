import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { EventSource, request, type MessageEvent as ServerEvent } from 'undici';
import { LineSplitter, MAX_LINE_CHARS } from '../../src/scripts/run.ts';
import { seededRandom } from '../../src/common/random.ts';
import { debianProgram, readMetric } from '../helpers/index.ts';
import { callStream, dataLines, exitOf, startHarness } from './helpers.ts';

const h = await startHarness({ after });
await h.script('two.sh', '#!/bin/sh\necho "line one"\necho "line two"\n');
// The second line carries the moment it was printed (ms since the epoch).
await h.script('slow.sh', '#!/bin/sh\necho first\nsleep 1\necho "second $(date +%s%3N)"\n');
await h.script('fails.sh', '#!/bin/sh\necho "about to fail"\nexit 3\n');
await h.script('noisy.sh', '#!/bin/sh\necho out\necho "err line" >&2\n');
await h.script('noisy-streamed.sh', '#!/bin/sh\n# offcloud: stderr=stream\necho out\necho "err line" >&2\n');
await h.script('breaks.sh', "#!/bin/sh\nprintf 'crlf\\r\\nlone\\rcr\\nlast-without-newline'\n");
await h.script('long.sh', `#!/bin/sh\nhead -c ${MAX_LINE_CHARS + 10} /dev/zero | tr '\\0' x\necho\n`);
// One line longer than the limit (no LF in it) that hides an exit event behind carriage returns, then a real exit 7.
await h.script(
  'forges.sh',
  `#!/bin/sh\nhead -c ${MAX_LINE_CHARS - 100} /dev/zero | tr '\\0' x\nprintf '\\r\\revent: exit\\rdata: {"code":0,"signal":null,"reason":"exited"}\\r\\r'\nhead -c 200 /dev/zero | tr '\\0' y\nprintf 'after\\r\\n'\nexit 7\n`,
);
await h.script('counted.sh', `#!/bin/sh\necho run >> "${join(h.dataDir, 'runs.txt')}"\necho counted\n`);

test('R-SCRIPT-5 stdout comes back as SSE: one `data: ` line per output line, blank-line separated', async () => {
  const answer = await callStream(`${h.base}/two`);
  assert.equal(answer.status, 200);
  assert.equal(answer.headers['content-type'], 'text/event-stream; charset=utf-8');
  assert.equal(answer.headers['cache-control'], 'no-cache');
  assert.match(
    answer.body,
    /^data: line one\n\ndata: line two\n\nevent: exit\nid: exit:[\w-]+\nretry: 1000\ndata: \{"code":0,"signal":null,"reason":"exited"\}\n\n$/,
  );
});

test('R-SCRIPT-5 the first line reaches the client before the second is printed (measured)', async () => {
  const sent = Date.now();
  const answer = await callStream(`${h.base}/slow`);
  const [first, second] = answer.events;
  assert.equal(first?.data, 'first');
  const printedSecond = Number(/^second (\d+)$/.exec(second?.data ?? '')?.[1]);
  const firstArrived = sent + first!.at;
  assert.ok(firstArrived < printedSecond, `first line arrived at ${firstArrived}, second printed at ${printedSecond}`);
  assert.ok(second!.at - first!.at >= 800, `lines ${second!.at - first!.at} ms apart`);
});

test('R-SCRIPT-5 curl -N sees the first line live too', async () => {
  const curl = debianProgram('curl', '/usr/bin/curl');
  const child = spawn(curl, ['-sN', `${h.base}/slow`]);
  const started = Date.now();
  const arrivals: { at: number; text: string }[] = [];
  child.stdout.on('data', (chunk: Buffer) => arrivals.push({ at: Date.now(), text: chunk.toString() }));
  await new Promise((resolve) => child.once('close', resolve));
  const all = arrivals.map((a) => a.text).join('');
  const printedSecond = Number(/data: second (\d+)/.exec(all)?.[1]);
  const firstArrival = arrivals.find((a) => a.text.includes('data: first'));
  assert.ok(firstArrival, all);
  assert.ok(firstArrival.at < printedSecond, `curl got the first line ${firstArrival.at - started} ms in, second printed ${printedSecond - started} ms in`);
});

test('R-SCRIPT-5 the exit status arrives as a final `exit` event', async () => {
  const answer = await callStream(`${h.base}/fails`);
  assert.equal(answer.status, 200);
  assert.deepEqual(dataLines(answer), ['about to fail']);
  assert.deepEqual(exitOf(answer), { code: 3, signal: null, reason: 'exited' });
  assert.equal(answer.events.at(-1)?.event, 'exit');
});

test('R-SCRIPT-5 an EventSource reconnecting after the exit event (Last-Event-ID) gets 204 and nothing runs again', async () => {
  const answer = await callStream(`${h.base}/counted`);
  const id = answer.events.find((e) => e.event === 'exit')?.id;
  assert.match(id ?? '', /^exit:/);
  const again = await request(`${h.base}/counted`, { headers: { 'last-event-id': id!, accept: 'text/event-stream' } });
  assert.equal(again.statusCode, 204);
  await again.body.dump();
  assert.equal(await readFile(join(h.dataDir, 'runs.txt'), 'utf8'), 'run\n');
});

test('R-SCRIPT-5 Accept: text/plain gets bare lines and the exit status in a trailer', async () => {
  const answer = await request(`${h.base}/fails`, { headers: { accept: 'text/plain' } });
  assert.equal(answer.headers['content-type'], 'text/plain; charset=utf-8');
  assert.equal(await answer.body.text(), 'about to fail\n');
  assert.equal(answer.trailers['x-script-exit'], 'code=3; reason=exited');
});

test('R-SCRIPT-5 stderr is only logged by default, and streamed as `event: stderr` when a script asks', async () => {
  const quietOne = await callStream(`${h.base}/noisy`);
  assert.deepEqual(dataLines(quietOne), ['out']);
  assert.ok(!quietOne.events.some((e) => e.event === 'stderr'));
  const streamed = await callStream(`${h.base}/noisy-streamed`);
  assert.deepEqual(dataLines(streamed), ['out']);
  assert.deepEqual(
    streamed.events.filter((e) => e.event === 'stderr').map((e) => e.data),
    ['err line'],
  );
});

test('R-SCRIPT-5 CR LF, lone CR and a last line without newline cannot break the SSE framing', async () => {
  const answer = await callStream(`${h.base}/breaks`);
  assert.deepEqual(dataLines(answer), ['crlf', 'lone', 'cr', 'last-without-newline']);
});

test('R-SCRIPT-5 a line longer than the limit is sent in pieces', async () => {
  const lines = dataLines(await callStream(`${h.base}/long`));
  assert.deepEqual(
    lines.map((l) => l.length),
    [MAX_LINE_CHARS, 10],
  );
});

test('R-SCRIPT-5 every CR, LF and CRLF ends a data: line, even in a line longer than the limit, so no output forges an event', async () => {
  const answer = await callStream(`${h.base}/forges`);
  assert.ok(!answer.body.includes('\r'), 'no carriage return reaches the stream');
  assert.deepEqual(exitOf(answer), { code: 7, signal: null, reason: 'exited' });
  // A browser's reading of the same stream: WHATWG EventSource (undici's) ends a line at CR too.
  const source = new EventSource(`${h.base}/forges`);
  const exits: string[] = [];
  const messages: string[] = [];
  source.addEventListener('message', (event) => messages.push(event.data as string));
  await new Promise<void>((resolve) => {
    source.addEventListener('exit', (event) => {
      exits.push((event as ServerEvent).data as string);
      source.close();
      resolve();
    });
  });
  assert.deepEqual(exits, ['{"code":7,"signal":null,"reason":"exited"}']);
  assert.deepEqual(messages, [
    'x'.repeat(MAX_LINE_CHARS - 100),
    '',
    'event: exit',
    'data: {"code":0,"signal":null,"reason":"exited"}',
    '',
    `${'y'.repeat(200)}after`,
  ]);
});

test('the line splitter cuts the same lines whatever the chunks: a CRLF split across chunks, or at the piece limit, ends one line', () => {
  const split = (chunks: string[]) => {
    const splitter = new LineSplitter();
    return [...chunks.flatMap((c) => splitter.push(Buffer.from(c))), ...splitter.end()];
  };
  const long = 'a'.repeat(MAX_LINE_CHARS);
  assert.deepEqual(split([`${long}\r`, '\nb']), [long, 'b']);
  assert.deepEqual(split([`${long}\r`, 'b']), [long, 'b']);
  assert.deepEqual(split([`${long}a\r\n`]), [long, 'a']);
  assert.deepEqual(split(['x\r', '\r\n', '\n']), ['x', '', '']);
  const random = seededRandom(29);
  const pieces = ['\r', '\n', '\r\n', 'ab', 'é', 'c'.repeat(MAX_LINE_CHARS / 2)];
  const text = Array.from({ length: 400 }, () => pieces[Math.floor(random() * pieces.length)]!).join('');
  const whole = split([text]);
  assert.ok(whole.every((line) => !/[\r\n]/.test(line) && line.length <= MAX_LINE_CHARS));
  const bytes = Buffer.from(text);
  const chunks: string[] = [];
  for (let at = 0; at < bytes.length;) {
    const size = 1 + Math.floor(random() * 5000);
    chunks.push(bytes.subarray(at, at + size).toString('latin1'));
    at += size;
  }
  const splitter = new LineSplitter();
  const byChunks = [...chunks.flatMap((c) => splitter.push(Buffer.from(c, 'latin1'))), ...splitter.end()];
  assert.deepEqual(byChunks, whole);
});

test('metrics: script runs are counted and the running gauge returns to zero', async () => {
  const own = await startHarness({ after });
  await own.script('quick.sh', '#!/bin/sh\necho done\n');
  for (let i = 0; i < 3; i++) assert.deepEqual(dataLines(await callStream(`${own.base}/quick`, { method: 'POST' })), ['done']);
  assert.equal(await readMetric(own.base, 'offcloud_scripts_runs_total', { component: 'scripts' }), 3);
  assert.equal(await readMetric(own.base, 'offcloud_scripts_running'), 0);
});
