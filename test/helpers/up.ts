/** Helpers for tests that run `offcloud up`: free ports for every listener, and reading what it started from up.json. */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { Agent, request } from 'undici';
import { components } from '../../src/components.ts';
import { kebab } from '../../src/common/config.ts';
import { TABLE_WIDTH } from '../../src/up/table.ts';
import { readUpState, type UpState } from '../../src/up/state.ts';

/** A component's listening-port options (`port`, `httpsPort`, `restPort`, …). */
export function portOptionKeys(options: Record<string, { type: string }>): string[] {
  return Object.entries(options)
    .filter(([key, spec]) => spec.type === 'integer' && /^(port|.*Port)$/.test(key))
    .map(([key]) => key);
}

/** Every listening-port option of every component set to 0, as `offcloud up` flags. */
export function anyFreePortFlags(): string[] {
  return components.flatMap((c) => portOptionKeys(c.options).flatMap((key) => [`--${c.name}-${kebab(key)}`, '0']));
}

/** What the running `offcloud up` on `dataDir` wrote to up.json; fails when it wrote none. */
export async function upState(dataDir: string): Promise<UpState> {
  const state = await readUpState(dataDir);
  assert.ok(state, `offcloud up wrote ${dataDir}/up.json`);
  return state;
}

/** A long value printed alone on its line may be wider than the table; every other line fits 100 columns. */
export function linesTooWide(table: string): string[] {
  return table.split('\n').filter((line) => line.length > TABLE_WIDTH && /\s/.test(line));
}

/** Every component with an HTTP(S) URL in up.json answers 200 on `/health` at one of them (trusting up's CA). */
export async function assertEveryComponentHealthy(t: { after(fn: () => unknown): void }, dataDir: string): Promise<void> {
  const state = await upState(dataDir);
  const caPath = Object.values(state.components).find((c) => c.caCertPath)?.caCertPath;
  assert.ok(caPath, 'a component serves TLS with the local CA');
  const agent = new Agent({ connect: { ca: await readFile(caPath, 'utf8') } });
  t.after(() => agent.close());
  for (const [name, { urls }] of Object.entries(state.components)) {
    const origins = new Set(urls.filter(({ url }) => /^https?:\/\//.test(url)).map(({ url }) => new URL(url.replace(/\{[^}]*\}/g, 'x')).origin));
    if (!origins.size) continue;
    const statuses: string[] = [];
    for (const origin of origins) {
      const response = await request(`${origin}/health`, { dispatcher: agent });
      await response.body.dump();
      statuses.push(`${origin} ${response.statusCode}`);
    }
    assert.ok(
      statuses.some((s) => s.endsWith(' 200')),
      `${name}: /health on one of its URLs (${statuses.join(', ')})`,
    );
  }
}
