import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = new URL('../..', import.meta.url).pathname;

function files(path: string): string[] {
  if (statSync(path).isFile()) return [path];
  return readdirSync(path).flatMap((name) => files(join(path, name)));
}

/** The text files a reader of the repository meets: sources, tests, docs, benches, README and CONTRIBUTING. */
function repositoryText(): string[] {
  return [
    ...['test', 'src', 'docs', 'bench', 'scripts'].flatMap((dir) => files(join(ROOT, dir))),
    join(ROOT, 'README.md'),
    join(ROOT, 'CONTRIBUTING.md'),
  ].filter((file) => /\.(ts|md|mjs|js)$/.test(file));
}

/** Each line of the repository's text that matches `pattern`, as `path:line: text`. */
function linesMatching(pattern: RegExp, allowed: (file: string) => boolean = () => false): string[] {
  return repositoryText()
    .filter((file) => !allowed(file.slice(ROOT.length)))
    .flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, i) => (pattern.test(line) ? [`${file.slice(ROOT.length)}:${i + 1}: ${line.trim()}`] : [])),
    );
}

test('every spec rule id named in the tests, sources and docs is listed in docs/spec-rules.md', () => {
  const listed = new Set([...readFileSync(join(ROOT, 'docs', 'spec-rules.md'), 'utf8').matchAll(/^- (R-[A-Z]+-\d+) /gm)].map((m) => m[1]));
  assert.ok(listed.size > 50, 'the rule list is there');
  const named = new Map<string, string>();
  for (const file of repositoryText()) {
    for (const [id] of readFileSync(file, 'utf8').matchAll(/\bR-[A-Z]+-\d+\b/g)) if (!named.has(id)) named.set(id, file);
  }
  const unknown = [...named].filter(([id]) => !listed.has(id)).map(([id, file]) => `${id} (${file.slice(ROOT.length)})`);
  assert.deepEqual(unknown, []);
});

test('no text in the repository points at an issue tracker or notes that live outside it: each says its reason itself', () => {
  assert.deepEqual(linesMatching(/\bissues? #?\d+|[(]issue\b/i), []);
});

test('nothing reads the data beside the clone but the sentiment trainer, whose data is optional (a clone without ../shared passes)', () => {
  const allowed = (file: string) => file === 'src/sentiment/train.ts';
  assert.deepEqual(linesMatching(/\.\.\/shared\/|'\.\.', 'shared'|\/work\//, allowed), []);
});
