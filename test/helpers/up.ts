/** Helpers for tests that run `offcloud up`: free ports for every listener, and reading its table. */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { Agent, request } from 'undici';
import { components } from '../../src/components.ts';
import { kebab } from '../../src/common/config.ts';

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

/** The HTTP(S) origins in up's table, by component: rows belong to the component named in the first column until the next name. */
export function originsByComponent(table: string): Map<string, Set<string>> {
  const origins = new Map<string, Set<string>>();
  let current = '';
  for (const line of table.split('\n').slice(2)) {
    const name = /^(\S+)\s/.exec(line)?.[1];
    if (name) current = name;
    const set = origins.get(current) ?? new Set<string>();
    for (const m of line.matchAll(/\bhttps?:\/\/127\.0\.0\.1:\d+/g)) set.add(m[0]);
    origins.set(current, set);
  }
  return origins;
}

/** Every component with an HTTP(S) URL in up's table answers 200 on `/health` at one of them (trusting up's CA). */
export async function assertEveryComponentHealthy(t: { after(fn: () => unknown): void }, table: string, caPath: string): Promise<void> {
  const agent = new Agent({ connect: { ca: await readFile(caPath, 'utf8') } });
  t.after(() => agent.close());
  for (const [name, origins] of originsByComponent(table)) {
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
