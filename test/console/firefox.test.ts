/**
 * The console in Firefox: Debian's firefox-esr driven by puppeteer-core over
 * WebDriver BiDi, against real components. Every page renders its real data
 * (the checks the Chromium suite runs, from pages.ts); a blob uploaded in the
 * page is read back by the storage SDK; a script run from the page streams
 * its lines in order. Screenshots go to test-artifacts/console/firefox-*.
 */
import assert from 'node:assert/strict';
import { after, test, type TestContext } from 'node:test';
import { blobService, Cleanup, launchFirefox, screenshot, startStack } from './harness.ts';
import { chooseFile, click, driven, fill, findText, pageChecks, textOf, type Driven } from './pages.ts';

const cleanup = new Cleanup(after);
const stack = await startStack(cleanup);
const browser = await launchFirefox(cleanup);
const checks = pageChecks(stack);

/** A page at #/<name>, closed when its test ends, failing the test on a script error. */
async function openPage(t: TestContext, name: string): Promise<Driven> {
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push((err as Error).message));
  t.after(async () => {
    await page.close();
    assert.deepEqual(problems, [], `script errors on the ${name} page`);
  });
  const view = driven(page);
  await view.goto(`${stack.base}/#/${name}`);
  await checks[name]!(view);
  return view;
}

for (const name of Object.keys(checks)) {
  test(`firefox: the ${name} page shows its real data`, async (t) => {
    await screenshot(await openPage(t, name), `firefox-${name}`);
  });
}

test('firefox: a container made and a blob uploaded in the page are read back by the storage SDK', async (t) => {
  const page = await openPage(t, 'storage');
  await fill(page, '#container-name', 'from-firefox');
  await click(page, 'form[aria-label="create a container"] button', 'Create');
  await findText(page, 'h2', 'Blobs in from-firefox');
  const content = Buffer.from('a blob from firefox\n'.repeat(100));
  await chooseFile(page, '#upload-file', { name: 'note.txt', type: 'text/plain', content });
  await fill(page, '#upload-name', 'dir/note.txt');
  await click(page, 'form[aria-label="upload a blob"] button', 'Upload');
  await findText(page, 'a', 'dir/note.txt');
  const blob = blobService(stack).getContainerClient('from-firefox').getBlobClient('dir/note.txt');
  assert.deepEqual(await blob.downloadToBuffer(), content);
  assert.equal((await blob.getProperties()).contentType, 'text/plain');
});

test('firefox: a script run from the page streams its lines in order', async (t) => {
  const page = await openPage(t, 'scripts');
  await click(page, 'button', 'open /hello');
  await fill(page, '#params', 'name=firefox');
  await click(page, 'form[aria-label="run /hello"] button[type="submit"]', 'Run /hello');
  // The first line is on the page before the script has printed its last one.
  await findText(page, 'pre[aria-label="output"]', 'hello firefox');
  assert.doesNotMatch(await textOf(page, 'pre[aria-label="output"]'), /third line/);
  await findText(page, 'p.exit', 'exit 0 (exited)');
  assert.equal(await textOf(page, 'pre[aria-label="output"]'), 'hello firefox\nsecond line\nthird line\n');
});
