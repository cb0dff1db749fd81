/**
 * CI runs the README's test command: `.ci/run` is `npm ci` followed by the
 * steps of package.json's `check` script, one per line, ending with `npm test`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';

const ROOT = new URL('../../', import.meta.url);

test('.ci/run is npm ci, then the steps of `npm run check` (the README test command) in order, ending with npm test', async () => {
  const readme = await readFile(new URL('README.md', ROOT), 'utf8');
  const twoCommands = /## The two commands\s+```sh\n([^`]*)```/.exec(readme)?.[1] ?? '';
  assert.match(twoCommands.split('\n')[1] ?? '', /^npm run check\s/, "the README's second command is npm run check");

  const pkg = JSON.parse(await readFile(new URL('package.json', ROOT), 'utf8')) as { scripts: Record<string, string> };
  const checkSteps = pkg.scripts.check!.split('&&').map((step) => step.trim());
  const ciSteps = (await readFile(new URL('.ci/run', ROOT), 'utf8'))
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.startsWith('npm '));
  assert.deepEqual(ciSteps, ['npm ci', ...checkSteps]);
  assert.equal(ciSteps.at(-1), 'npm test');
});
