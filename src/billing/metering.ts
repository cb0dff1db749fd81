/**
 * What the billing endpoint does with a container's calls: check the key
 * against the resource kind and quota, and record usage reports. A report is
 * checked field by field and refused if it carries anything but counts.
 */
import {
  CONTAINER_KIND_NAMES,
  MAX_METER_QUANTITY,
  MAX_METERS_PER_REPORT,
  METER_NAME_PATTERN,
  type ContainerIdentity,
  type ContainerKind,
  type UsageReport,
} from '../cognitive/protocol.ts';
import { InvalidQueryError, InvalidReportError, KindMismatchError, UnknownResourceError } from './errors.ts';
import { PERIODS, type BillingStore, type Period, type Resource, type UsageTotal } from './store.ts';

const IDENTITY_FIELDS = ['containerType', 'containerId', 'containerVersion'];
const REPORT_FIELDS = [...IDENTITY_FIELDS, 'reportId', 'periodStart', 'periodEnd', 'meters'];
const METER_NAME = new RegExp(METER_NAME_PATTERN);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function onlyFields(value: Record<string, unknown>, allowed: string[], what: string): void {
  const extra = Object.keys(value).find((key) => !allowed.includes(key));
  if (extra !== undefined) throw new InvalidReportError(`${what}: unexpected field ${JSON.stringify(extra.slice(0, 64))}`);
}

function shortString(value: unknown, field: string, max = 128): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    throw new InvalidReportError(`${field} must be a string of 1 to ${max} characters`);
  }
  return value;
}

function timestamp(value: unknown, field: string): string {
  const text = shortString(value, field, 40);
  if (Number.isNaN(Date.parse(text))) throw new InvalidReportError(`${field} must be an ISO 8601 time`);
  return text;
}

export function parseIdentity(body: unknown, allowed = IDENTITY_FIELDS): ContainerIdentity {
  if (!isObject(body)) throw new InvalidReportError('the body must be a JSON object');
  onlyFields(body, allowed, 'container identity');
  if (!CONTAINER_KIND_NAMES.includes(body.containerType as ContainerKind)) {
    throw new InvalidReportError(`containerType must be one of ${CONTAINER_KIND_NAMES.join(', ')}`);
  }
  return {
    containerType: body.containerType as ContainerKind,
    containerId: shortString(body.containerId, 'containerId'),
    containerVersion: shortString(body.containerVersion, 'containerVersion'),
  };
}

export function parseUsageReport(body: unknown): UsageReport & { reportId: string } {
  const identity = parseIdentity(body, REPORT_FIELDS);
  const fields = body as Record<string, unknown>;
  if (!Array.isArray(fields.meters) || fields.meters.length > MAX_METERS_PER_REPORT) {
    throw new InvalidReportError(`meters must be an array of at most ${MAX_METERS_PER_REPORT} {name, quantity}`);
  }
  const meters = fields.meters.map((meter: unknown) => {
    if (!isObject(meter)) throw new InvalidReportError('each meter must be an object {name, quantity}');
    onlyFields(meter, ['name', 'quantity'], 'meter');
    const name = shortString(meter.name, 'meter name');
    if (!METER_NAME.test(name)) throw new InvalidReportError(`meter name ${JSON.stringify(name)} is not a meter name`);
    const quantity = meter.quantity;
    if (typeof quantity !== 'number' || !Number.isSafeInteger(quantity) || quantity < 0 || quantity > MAX_METER_QUANTITY) {
      throw new InvalidReportError(`meter ${name}: quantity must be an integer from 0 to ${MAX_METER_QUANTITY}`);
    }
    return { name, quantity };
  });
  return {
    ...identity,
    reportId: shortString(fields.reportId, 'reportId', 64),
    periodStart: timestamp(fields.periodStart, 'periodStart'),
    periodEnd: timestamp(fields.periodEnd, 'periodEnd'),
    meters,
  };
}

/** The resource behind a container's key, if it is of the container's kind and within quota. */
export async function authorizeContainer(store: BillingStore, apiKey: string | undefined, identity: ContainerIdentity): Promise<Resource> {
  if (!apiKey) throw new UnknownResourceError();
  await store.refreshResources();
  const resource = store.resourceForKey(apiKey);
  if (resource.kind !== identity.containerType) throw new KindMismatchError(resource.kind, identity.containerType);
  return resource;
}

/** Records a report, then tells the container whether it is now over quota. */
export async function acceptUsageReport(store: BillingStore, apiKey: string | undefined, body: unknown): Promise<Resource> {
  const report = parseUsageReport(body);
  const resource = await authorizeContainer(store, apiKey, report);
  await store.recordUsage(resource, report);
  store.checkQuota(resource);
  return resource;
}

export interface UsageQuery {
  period: Period;
  /** A resource's name or id; absent: every resource. */
  resource?: string;
}

/** `?period=minute|hour|day|month|all&resource=NAME|ID`, nothing else. */
export function parseUsageQuery(query: unknown): UsageQuery {
  const fields = (isObject(query) ? query : {}) as Record<string, unknown>;
  const extra = Object.keys(fields).find((key) => key !== 'period' && key !== 'resource');
  if (extra !== undefined) throw new InvalidQueryError(`unknown query parameter ${JSON.stringify(extra.slice(0, 64))}; use period and resource`);
  const period = fields.period ?? 'hour';
  if (!PERIODS.includes(period as Period)) throw new InvalidQueryError(`period must be one of ${PERIODS.join(', ')}`);
  if (fields.resource === undefined) return { period: period as Period };
  if (typeof fields.resource !== 'string' || !fields.resource || fields.resource.length > 128) {
    throw new InvalidQueryError('resource must be one resource name or id of 1 to 128 characters');
  }
  return { period: period as Period, resource: fields.resource };
}

/** Usage per resource and meter in time buckets of the period, oldest first: counts only, as recorded. */
export async function usageOverTime(store: BillingStore, query: unknown): Promise<{ period: Period; usage: UsageTotal[] }> {
  const { period, resource } = parseUsageQuery(query);
  await store.refreshResources();
  return { period, usage: store.totals(period, resource) };
}
