/**
 * `offcloud up --only storage,calculator`: the components named, plus the ones
 * they need under `up` (`upNeeds`), in up's start order; each added one
 * remembers which chosen components needed it and why, for the table.
 */
import type { ComponentDefinition } from '../common/component.ts';
import { describeKey } from '../common/config.ts';
import { UsageError } from '../common/errors.ts';

export interface Selection {
  components: ComponentDefinition[];
  /** For a component started only because others need it: `storage: bearer tokens (§4.10)`, one line per need. */
  neededFor: Map<string, string[]>;
}

export function selectComponents(
  all: readonly ComponentDefinition[],
  needs: Readonly<Record<string, Readonly<Record<string, string>>>>,
  only: readonly string[],
): Selection {
  if (!only.length) return { components: [...all], neededFor: new Map() };
  const names = all.map((c) => c.name);
  const unknown = only.filter((name) => !names.includes(name));
  if (unknown.length) {
    throw new UsageError(
      `${describeKey('', 'only')}: unknown component${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => JSON.stringify(n)).join(', ')}; the components are ${names.join(', ')}`,
    );
  }
  const wanted = new Set(only);
  // A Set's iteration also visits what is added during it: this walks the needs of the needs too.
  for (const name of wanted) for (const needed of Object.keys(needs[name] ?? {})) wanted.add(needed);
  const neededFor = new Map<string, string[]>();
  for (const name of wanted) {
    if (only.includes(name)) continue;
    const by = [...wanted].filter((dependent) => needs[dependent]?.[name]);
    neededFor.set(
      name,
      by.map((dependent) => `${dependent}: ${needs[dependent]![name]}`),
    );
  }
  return { components: all.filter((c) => wanted.has(c.name)), neededFor };
}
