import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = new URL('../..', import.meta.url).pathname;

function files(path: string): string[] {
  if (statSync(path).isFile()) return [path];
  return readdirSync(path).flatMap((name) => files(join(path, name)));
}

test('every spec rule id named in the tests, sources and docs is listed in docs/spec-rules.md', () => {
  const listed = new Set([...readFileSync(join(ROOT, 'docs', 'spec-rules.md'), 'utf8').matchAll(/^- (R-[A-Z]+-\d+) /gm)].map((m) => m[1]));
  assert.ok(listed.size > 50, 'the rule list is there');
  const named = new Map<string, string>();
  for (const file of [...['test', 'src', 'docs', 'bench'].flatMap((dir) => files(join(ROOT, dir))), join(ROOT, 'README.md'), join(ROOT, 'CONTRIBUTING.md')]) {
    if (!/\.(ts|md|mjs|js)$/.test(file)) continue;
    for (const [id] of readFileSync(file, 'utf8').matchAll(/\bR-[A-Z]+-\d+\b/g)) if (!named.has(id)) named.set(id, file);
  }
  const unknown = [...named].filter(([id]) => !listed.has(id)).map(([id, file]) => `${id} (${file.slice(ROOT.length)})`);
  assert.deepEqual(unknown, []);
});
