/**
 * up's table as a person reads and copies it: a URL, key, token or connection
 * string is never broken, a long one stands alone and whole on its line, and
 * prose wraps at spaces only.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RunningComponent } from '../../src/common/component.ts';
import type { UpRecord } from '../../packages/testcontainers/src/index.ts';
import { formatStartTable, TABLE_WIDTH } from '../../src/up/table.ts';
import type { UpState } from '../../src/up/state.ts';
import { linesTooWide } from '../helpers/up.ts';

const close = () => Promise.resolve();
const LONG_CONNECTION =
  'DefaultEndpointsProtocol=https;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=https://127.0.0.1:10443/devstoreaccount1;';
const LONG_URL = `https://127.0.0.1:10443/${'a/'.repeat(60)}end`;

test('the table never breaks a value: a long one stands alone and whole, a short one beside its label; prose wraps at spaces', () => {
  const running: RunningComponent = {
    urls: [
      { label: 'blob endpoint', url: 'https://127.0.0.1:10443/devstoreaccount1' },
      { label: 'a label longer than the label column', url: LONG_URL },
    ],
    details: [
      { label: 'account', value: 'devstoreaccount1' },
      { label: 'connection string', value: LONG_CONNECTION },
      { label: `a note long enough to wrap ${'word '.repeat(30)}end` },
    ],
    close,
  };
  const table = formatStartTable(new Map([['storage', running]]), {
    failed: new Map([['face', { reason: `model ${'x'.repeat(120)} not found`, fix: 'offcloud models pull' }]]),
  });
  const lines = table.split('\n');
  for (const value of [LONG_CONNECTION, LONG_URL]) assert.ok(lines.includes(value), `${value.slice(0, 40)}… is alone and whole on a line`);
  assert.ok(lines.some((line) => line.endsWith('· account: devstoreaccount1')));
  assert.ok(lines.some((line) => line.trim() === '· connection string:'));
  // The face's reason holds a word wider than the table: whole too, never split.
  assert.ok(lines.includes('x'.repeat(120)));
  assert.deepEqual(linesTooWide(table), [], `every line but a lone value fits ${TABLE_WIDTH} columns`);
  assert.ok(lines.filter((line) => line.includes('word')).length > 1, 'the note wraps');
});

test('up.json as offcloud writes it is what the Testcontainers module reads (checked when this file compiles)', () => {
  const fits = (state: UpState): UpRecord => state;
  const state: UpState = { pid: 1, startedAt: '', facts: {}, components: {}, failed: {} };
  assert.deepEqual(fits(state).facts, {});
});
