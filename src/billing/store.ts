/**
 * The billing endpoint's state in the data dir: resources (kind, hashed key,
 * quota) in resources.json, written atomically; usage reports appended to
 * usage.jsonl, one JSON line each, flushed to disk before a report is
 * acknowledged (common/append-log.ts: a line torn by a crash was never
 * acknowledged and is cut off when the log is opened).
 */
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { AppendLog } from '../common/append-log.ts';
import { removeStaleTemporaries, writeFileAtomic } from '../common/files.ts';
import { SerialQueue } from '../common/serial-queue.ts';
import { CONTAINER_KINDS, type ContainerKind, type UsageReport } from '../cognitive/protocol.ts';
import { QuotaExceededError, UnknownResourceError } from './errors.ts';

export interface Resource {
  id: string;
  name: string;
  kind: ContainerKind;
  /** sha256 of the key, hex; the key itself is shown once, at creation. */
  keyHash: string;
  /** Most billed-meter units per calendar month (UTC); null = no limit. */
  quota: number | null;
  createdAt: string;
}

/** One line of usage.jsonl. */
export interface UsageRecord extends UsageReport {
  reportId: string;
  resourceId: string;
  receivedAt: string;
}

export type Period = 'minute' | 'hour' | 'day' | 'month' | 'all';
export const PERIODS: readonly Period[] = ['minute', 'hour', 'day', 'month', 'all'];
/** Characters of an ISO 8601 UTC time that name each period's bucket: 2026-11-26T05:12 is a minute. */
const PERIOD_LENGTH: Record<Exclude<Period, 'all'>, number> = { minute: 16, hour: 13, day: 10, month: 7 };

export interface UsageTotal {
  resourceId: string;
  resourceName: string;
  kind: ContainerKind;
  period: string;
  meter: string;
  quantity: number;
}

export function billingDir(dataDir: string): string {
  return join(dataDir, 'billing');
}

function hashKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

export function periodOf(isoTime: string, period: Period): string {
  return period === 'all' ? 'all' : isoTime.slice(0, PERIOD_LENGTH[period]);
}

function reportKey(resourceId: string, reportId: string): string {
  return `${resourceId} ${reportId}`;
}

export class BillingStore {
  #resources: Resource[] = [];
  #resourcesMtime = 0;
  #usage: UsageRecord[] = [];
  /** `<resource id> <report id>` of every recorded report: ids are unique per resource, not across resources. */
  #reportIds = new Set<string>();
  readonly #appends = new SerialQueue();
  readonly #usageLog: AppendLog;

  private constructor(
    readonly dir: string,
    usageLog: AppendLog,
  ) {
    this.#usageLog = usageLog;
  }

  /** Loads resources and the usage log (cutting off a torn last line). */
  static async open(dataDir: string): Promise<BillingStore> {
    const dir = billingDir(dataDir);
    const { log, entries } = await AppendLog.open(join(dir, 'usage.jsonl'), 0o600);
    const store = new BillingStore(dir, log);
    await removeStaleTemporaries(store.#resourcesPath);
    await store.refreshResources();
    for (const record of entries as UsageRecord[]) {
      store.#usage.push(record);
      store.#reportIds.add(reportKey(record.resourceId, record.reportId));
    }
    return store;
  }

  get #resourcesPath(): string {
    return join(this.dir, 'resources.json');
  }

  get resources(): readonly Resource[] {
    return this.#resources;
  }

  /** Re-reads resources.json when it changed on disk (`offcloud billing resource create` beside a running endpoint). */
  async refreshResources(): Promise<void> {
    const mtime = await stat(this.#resourcesPath).then(
      (s) => s.mtimeMs,
      () => 0,
    );
    if (mtime === this.#resourcesMtime) return;
    this.#resources = mtime ? (JSON.parse(await readFile(this.#resourcesPath, 'utf8')) as Resource[]) : [];
    this.#resourcesMtime = mtime;
  }

  /** Creates a resource and returns it with its key (the only time the key is seen). */
  async createResource(fields: { kind: ContainerKind; name?: string; quota?: number | null; key?: string }): Promise<{ resource: Resource; key: string }> {
    await this.refreshResources();
    const key = fields.key ?? randomBytes(16).toString('hex');
    const resource: Resource = {
      id: randomUUID(),
      name: fields.name || `${fields.kind}-${this.#resources.length + 1}`,
      kind: fields.kind,
      keyHash: hashKey(key).toString('hex'),
      quota: fields.quota ?? null,
      createdAt: new Date().toISOString(),
    };
    this.#resources = [...this.#resources, resource];
    await writeFileAtomic(this.#resourcesPath, JSON.stringify(this.#resources, null, 2) + '\n', 0o600);
    return { resource, key };
  }

  /** The resource a key belongs to; every stored hash is compared, in constant time each. */
  resourceForKey(key: string): Resource {
    const given = hashKey(key);
    let found: Resource | undefined;
    for (const resource of this.#resources) {
      if (timingSafeEqual(given, Buffer.from(resource.keyHash, 'hex'))) found = resource;
    }
    if (!found) throw new UnknownResourceError();
    return found;
  }

  /** Billed-meter units the resource used in the calendar month (UTC) of `at`. */
  usedThisMonth(resource: Resource, at = new Date()): number {
    const month = periodOf(at.toISOString(), 'month');
    const meter = CONTAINER_KINDS[resource.kind].billedMeter;
    return this.#usage
      .filter((record) => record.resourceId === resource.id && periodOf(record.receivedAt, 'month') === month)
      .flatMap((record) => record.meters)
      .filter((m) => m.name === meter)
      .reduce((sum, m) => sum + m.quantity, 0);
  }

  /** Throws QuotaExceededError when the resource has used its monthly quota. */
  checkQuota(resource: Resource): void {
    if (resource.quota !== null && this.usedThisMonth(resource) >= resource.quota) throw new QuotaExceededError(resource.quota);
  }

  /**
   * Appends a report to the log and fsyncs it before returning. A report id
   * this resource sent before is acknowledged without counting again (the
   * container retries a batch whose answer it lost); another resource's ids
   * are its own business.
   */
  recordUsage(resource: Resource, report: UsageReport & { reportId: string }): Promise<void> {
    return this.#appends.run(async () => {
      const key = reportKey(resource.id, report.reportId);
      if (this.#reportIds.has(key) || report.meters.length === 0) return;
      const record: UsageRecord = { ...report, resourceId: resource.id, receivedAt: new Date().toISOString() };
      await this.#usageLog.append(record);
      this.#usage.push(record);
      this.#reportIds.add(key);
    });
  }

  /** Totals per resource, period and meter, oldest period first. */
  totals(period: Period, resourceFilter?: string): UsageTotal[] {
    const byKey = new Map<string, UsageTotal>();
    const resources = new Map(this.#resources.map((r) => [r.id, r]));
    for (const record of this.#usage) {
      const resource = resources.get(record.resourceId);
      if (!resource || (resourceFilter && resource.id !== resourceFilter && resource.name !== resourceFilter)) continue;
      const when = periodOf(record.receivedAt, period);
      for (const meter of record.meters) {
        const key = `${resource.id}\u0000${when}\u0000${meter.name}`;
        const total = byKey.get(key) ?? {
          resourceId: resource.id,
          resourceName: resource.name,
          kind: resource.kind,
          period: when,
          meter: meter.name,
          quantity: 0,
        };
        total.quantity += meter.quantity;
        byKey.set(key, total);
      }
    }
    return [...byKey.values()].sort(
      (a, b) => a.period.localeCompare(b.period) || a.resourceName.localeCompare(b.resourceName) || a.meter.localeCompare(b.meter),
    );
  }

  /** Every stored usage record (for tests and audits: proof that no payload is kept). */
  get usageRecords(): readonly UsageRecord[] {
    return this.#usage;
  }
}
