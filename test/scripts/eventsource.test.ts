import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { chromium } from 'playwright-core';
import { debianProgram } from '../helpers/index.ts';
import { startHarness } from './helpers.ts';

const h = await startHarness({ after });
const runs = join(h.dataDir, 'runs.txt');
await h.script('ticker.sh', `#!/bin/sh\necho run >> "${runs}"\necho "tick 1"\nsleep 1\necho "tick 2 $PARAM_WHO"\nexit 4\n`);

await h.script('greet.sh', '#!/bin/sh\necho "hello from the index"\n');
const browser = await chromium.launch({
  executablePath: debianProgram('chromium', '/usr/bin/chromium'),
  // Headless, with a fresh profile of playwright's own making.
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
after(() => browser.close());

test('R-SCRIPT-5 a browser EventSource (headless Debian chromium) receives the lines live, then the exit event, and does not run the script again', async () => {
  const page = await browser.newPage();
  await page.goto(`${h.base}/`);
  const seen = await page.evaluate(
    () =>
      new Promise<{ messages: { data: string; at: number }[]; exit: string; lastEventId: string }>((resolve, reject) => {
        const started = performance.now();
        const messages: { data: string; at: number }[] = [];
        const source = new EventSource('/ticker?who=browser');
        source.onmessage = (event) => messages.push({ data: event.data as string, at: performance.now() - started });
        source.addEventListener('exit', (event) => {
          const message = event as MessageEvent<string>;
          // Wait for the automatic reconnect: the server answers 204, which closes the source for good.
          const closed = setInterval(() => {
            if (source.readyState === EventSource.CLOSED) {
              clearInterval(closed);
              resolve({ messages, exit: message.data, lastEventId: message.lastEventId });
            }
          }, 20);
        });
        setTimeout(() => reject(new Error(`no exit event; got ${JSON.stringify(messages)}`)), 10_000);
      }),
  );
  assert.deepEqual(
    seen.messages.map((m) => m.data),
    ['tick 1', 'tick 2 browser'],
  );
  // The first line was shown before the script printed the second (1 s later).
  assert.ok(seen.messages[1]!.at - seen.messages[0]!.at >= 500, JSON.stringify(seen.messages));
  assert.deepEqual(JSON.parse(seen.exit), { code: 4, signal: null, reason: 'exited' });
  assert.match(seen.lastEventId, /^exit:/);
  assert.equal(await readFile(runs, 'utf8'), 'run\n');
});

test('R-SCRIPT-1 the index page runs a script from its "run" button and shows the streamed lines', async () => {
  const page = await browser.newPage();
  await page.goto(`${h.base}/`);
  await page.click('button[data-path="/greet"]');
  await page.waitForFunction(() => document.getElementById('output')?.textContent?.includes('[exit]'), undefined, { timeout: 10_000 });
  assert.equal(await page.textContent('#output'), 'hello from the index\n[exit] {"code":0,"signal":null,"reason":"exited"}\n');
});
