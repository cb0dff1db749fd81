/**
 * `offcloud billing resource create|list` and `offcloud billing usage`: the
 * management side of the billing endpoint, working on its data dir (safe
 * beside a running endpoint: it re-reads resources.json when it changes).
 */
import { parseArgs } from 'node:util';
import type { Subcommand } from '../common/component.ts';
import { commonOptions } from '../common/config.ts';
import { UsageError } from '../common/errors.ts';
import { formatTable } from '../common/table.ts';
import { CONTAINER_KIND_NAMES, type ContainerKind } from '../cognitive/protocol.ts';
import { BillingStore, PERIODS, type Period } from './store.ts';

function dataDirOf(value: string | undefined, env: NodeJS.ProcessEnv): string {
  return value ?? env.OFFCLOUD_BILLING_DATA_DIR ?? env.OFFCLOUD_DATA_DIR ?? commonOptions.dataDir.default;
}

function parse(args: string[], names: string[]): { values: Record<string, string | undefined>; positionals: string[] } {
  const options = Object.fromEntries([...names, 'data-dir'].map((name) => [name, { type: 'string' as const }]));
  try {
    const { values, positionals } = parseArgs({ args, options, allowPositionals: true, strict: true });
    return { values: values as Record<string, string | undefined>, positionals };
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

const RESOURCE_USAGE =
  'offcloud billing resource create --kind sentiment|face [--name NAME] [--quota N] [--data-dir DIR] | offcloud billing resource list [--data-dir DIR]';

async function resourceCommand(args: string[], out: NodeJS.WritableStream, env: NodeJS.ProcessEnv): Promise<number> {
  const { values, positionals } = parse(args, ['kind', 'name', 'quota']);
  const store = await BillingStore.open(dataDirOf(values['data-dir'], env));
  const action = positionals[0];
  if (action === 'list') {
    const rows = store.resources.map((r) => [r.name, r.kind, r.id, r.quota === null ? 'none' : String(r.quota), r.createdAt]);
    out.write(formatTable(['name', 'kind', 'id', 'monthly quota', 'created'], rows) + '\n');
    return 0;
  }
  if (action !== 'create') throw new UsageError(`usage: ${RESOURCE_USAGE}`);
  const kind = values.kind as ContainerKind | undefined;
  if (!kind || !CONTAINER_KIND_NAMES.includes(kind)) throw new UsageError(`--kind must be one of ${CONTAINER_KIND_NAMES.join(', ')}`);
  let quota: number | null = null;
  if (values.quota !== undefined) {
    quota = Number(values.quota);
    if (!/^\d+$/.test(values.quota) || !Number.isSafeInteger(quota)) throw new UsageError('--quota must be a whole number of units per month');
  }
  const { resource, key } = await store.createResource({ kind, name: values.name, quota });
  out.write(
    [
      `resource ${resource.name} (${resource.kind}) created, id ${resource.id}`,
      `ApiKey: ${key}`,
      'The key is shown only now; the data dir keeps its hash.',
    ].join('\n') + '\n',
  );
  return 0;
}

async function usageCommand(args: string[], out: NodeJS.WritableStream, env: NodeJS.ProcessEnv): Promise<number> {
  const { values } = parse(args, ['period', 'resource', 'format']);
  const period = (values.period ?? 'month') as Period;
  if (!PERIODS.includes(period)) throw new UsageError(`--period must be one of ${PERIODS.join(', ')}`);
  const store = await BillingStore.open(dataDirOf(values['data-dir'], env));
  const totals = store.totals(period, values.resource);
  if (values.format === 'json') {
    out.write(JSON.stringify(totals, null, 2) + '\n');
    return 0;
  }
  const rows = totals.map((t) => [t.period, t.resourceName, t.kind, t.meter, String(t.quantity)]);
  out.write(formatTable(['period', 'resource', 'kind', 'meter', 'quantity'], rows) + '\n');
  return 0;
}

export function billingSubcommands(out: NodeJS.WritableStream = process.stdout, env: NodeJS.ProcessEnv = process.env): Record<string, Subcommand> {
  return {
    resource: { summary: 'create or list billing resources (kind, key, quota)', usage: RESOURCE_USAGE, run: (args) => resourceCommand(args, out, env) },
    usage: {
      summary: 'usage totals per resource and period (counts only)',
      usage: 'offcloud billing usage [--period minute|hour|day|month|all] [--resource NAME|ID] [--format table|json] [--data-dir DIR]',
      run: (args) => usageCommand(args, out, env),
    },
  };
}
