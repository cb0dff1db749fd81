/** The billing endpoint (offcloud billing): resources, key checks, usage records, quota, the management commands. */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { startBilling } from '../../src/billing/server.ts';
import { billingSubcommands } from '../../src/billing/commands.ts';
import { BillingStore } from '../../src/billing/store.ts';
import { CONTAINER_KINDS } from '../../src/cognitive/protocol.ts';
import { quiet, tempDataDir } from '../helpers/index.ts';

const METER = CONTAINER_KINDS.sentiment.billedMeter;

async function command(dataDir: string, args: string[]): Promise<string> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  const [name, ...rest] = args;
  const code = await billingSubcommands(out, {})[name!]!.run([...rest, '--data-dir', dataDir]);
  assert.equal(code, 0);
  return Buffer.concat(chunks).toString('utf8');
}

async function createResource(dataDir: string, kind: string, extra: string[] = []): Promise<string> {
  const printed = await command(dataDir, ['resource', 'create', '--kind', kind, ...extra]);
  return /ApiKey: ([0-9a-f]{32})/.exec(printed)![1]!;
}

function report(quantity: number, extra: Record<string, unknown> = {}) {
  return {
    containerType: 'sentiment',
    containerId: 'c1',
    containerVersion: '1',
    reportId: randomUUID(),
    periodStart: '2026-01-01T00:00:00Z',
    periodEnd: '2026-01-01T00:10:00Z',
    meters: [{ name: METER, quantity }],
    ...extra,
  };
}

async function call(base: string, path: string, key: string | null, body: unknown) {
  const response = await request(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key === null ? {} : { 'ocp-apim-subscription-key': key }) },
    body: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
  });
  return { status: response.statusCode, body: (await response.body.json()) as Record<string, unknown> };
}

async function startWithResource(t: TestContext, extra: string[] = []) {
  const dataDir = await tempDataDir(t);
  const key = await createResource(dataDir, 'sentiment', extra);
  const billing = await startBilling({ ...quiet, dataDir });
  t.after(() => billing.close());
  return { dataDir, key, base: billing.facts!.billing!.billingUrl, billing };
}

test('R-SENT-8 R-FACE-6 billing validates a key for its resource kind: Valid, Invalid, Mismatch', async (t) => {
  const { base, key, dataDir } = await startWithResource(t);
  const identity = { containerType: 'sentiment', containerId: 'c1', containerVersion: '1' };
  assert.deepEqual((await call(base, '/billing/v1/validate', key, identity)).body.apiStatus, 'Valid');
  const wrong = await call(base, '/billing/v1/validate', 'f'.repeat(32), identity);
  assert.equal(wrong.status, 401);
  assert.equal(wrong.body.apiStatus, 'Invalid');
  assert.equal((await call(base, '/billing/v1/validate', null, identity)).body.apiStatus, 'Invalid');
  // A resource made by the command while the endpoint runs is seen at once.
  const faceKey = await createResource(dataDir, 'face');
  const mismatch = await call(base, '/billing/v1/validate', faceKey, identity);
  assert.equal(mismatch.status, 403);
  assert.equal(mismatch.body.apiStatus, 'Mismatch');
  assert.equal((await call(base, '/billing/v1/validate', faceKey, { ...identity, containerType: 'face' })).body.apiStatus, 'Valid');
  const listed = await command(dataDir, ['resource', 'list']);
  assert.match(listed, /sentiment-1\s+sentiment/);
  assert.doesNotMatch(listed, new RegExp(key), 'keys are stored hashed and never listed');
  assert.doesNotMatch(await readFile(join(dataDir, 'billing', 'resources.json'), 'utf8'), new RegExp(key));
});

test('R-SENT-9 usage reports are recorded durably, once per report id, and summed per resource and period', async (t) => {
  const { base, key, dataDir, billing } = await startWithResource(t);
  const first = report(5);
  assert.equal((await call(base, '/billing/v1/usage', key, first)).status, 200);
  assert.equal((await call(base, '/billing/v1/usage', key, first)).status, 200, 'a retried report is acknowledged');
  assert.equal((await call(base, '/billing/v1/usage', key, report(7))).status, 200);
  await billing.close();
  // A crash mid-append leaves a torn line; it was never acknowledged and is cut off on open.
  await appendFile(join(dataDir, 'billing', 'usage.jsonl'), '{"reportId":"torn","meters":[{"na');
  const restarted = await startBilling({ ...quiet, dataDir });
  t.after(() => restarted.close());
  assert.equal((await call(restarted.facts!.billing!.billingUrl, '/billing/v1/usage', key, report(1))).status, 200);
  const totals = JSON.parse(await command(dataDir, ['usage', '--period', 'all', '--format', 'json'])) as { quantity: number; meter: string }[];
  assert.deepEqual(
    totals.map((x) => [x.meter, x.quantity]),
    [[METER, 13]],
  );
  const month = new Date().toISOString().slice(0, 7);
  assert.match(await command(dataDir, ['usage']), new RegExp(`${month}\\s+sentiment-1\\s+sentiment\\s+${METER.replace(/\./g, '\\.')}\\s+13`));
  const day = JSON.parse(await command(dataDir, ['usage', '--period', 'day', '--format', 'json', '--resource', 'sentiment-1'])) as { period: string }[];
  assert.equal(day[0]!.period, new Date().toISOString().slice(0, 10));
  const lines = (await readFile(join(dataDir, 'billing', 'usage.jsonl'), 'utf8')).split('\n').filter(Boolean);
  assert.equal(lines.length, 3);
  for (const line of lines) JSON.parse(line);
});

test('R-SENT-9 a report carrying anything but counts is refused and stores nothing; the endpoint keeps serving', async (t) => {
  const { base, key, dataDir } = await startWithResource(t);
  const bad: [string, unknown][] = [
    ['a text field', report(1, { text: 'the customer wrote this' })],
    ['a document inside a meter', report(1, { meters: [{ name: METER, quantity: 1, documents: ['secret'] }] })],
    ['a sentence as a meter name', report(1, { meters: [{ name: 'I hate my bank', quantity: 1 }] })],
    ['a negative quantity', report(-1)],
    ['a fractional quantity', report(1.5)],
    ['a quantity as a string', report(1, { meters: [{ name: METER, quantity: '1' }] })],
    ['an unknown container type', report(1, { containerType: 'ocr' })],
    ['a bad period', report(1, { periodStart: 'yesterday' })],
    ['too many meters', report(1, { meters: Array.from({ length: 17 }, () => ({ name: METER, quantity: 1 })) })],
    ['an array body', [report(1)]],
    ['malformed JSON', '{"containerType":'],
    ['a huge body', JSON.stringify(report(1, { containerId: 'x'.repeat(200_000) }))],
  ];
  for (const [what, body] of bad) {
    const answer = await call(base, '/billing/v1/usage', key, body);
    assert.ok(answer.status === 400 || answer.status === 413, `${what}: ${answer.status}`);
    assert.equal(typeof (answer.body.error as { message?: unknown }).message, 'string', what);
  }
  const notFound = await call(base, '/billing/v1/../v1/usage%00', key, report(1));
  assert.equal(notFound.status, 404);
  assert.equal((await BillingStore.open(dataDir)).usageRecords.length, 0);
  assert.equal((await call(base, '/billing/v1/usage', key, report(2))).status, 200);
});

test('R-SENT-9 a quota: the report that reaches it is recorded, then billing answers OutOfQuota', async (t) => {
  const { base, key } = await startWithResource(t, ['--quota', '10']);
  assert.equal((await call(base, '/billing/v1/usage', key, report(6))).body.apiStatus, 'Valid');
  const over = await call(base, '/billing/v1/usage', key, report(4));
  assert.equal(over.status, 403);
  assert.equal(over.body.apiStatus, 'OutOfQuota');
  const identity = { containerType: 'sentiment', containerId: 'c2', containerVersion: '1' };
  assert.equal((await call(base, '/billing/v1/validate', key, identity)).body.apiStatus, 'OutOfQuota');
});

test('billing under offcloud up makes demo resources once and publishes their keys', async (t) => {
  const dataDir = await tempDataDir(t);
  const first = await startBilling({ ...quiet, dataDir, demoResources: true });
  const keys = { ...first.facts!.billing!.demoApiKeys };
  await first.close();
  const second = await startBilling({ ...quiet, dataDir, demoResources: true });
  t.after(() => second.close());
  assert.equal(second.facts!.billing!.demoApiKeys!.sentiment!, keys.sentiment);
  assert.equal(second.facts!.billing!.demoApiKeys!.face!, keys.face);
  const identity = { containerType: 'face', containerId: 'c1', containerVersion: '1' };
  assert.equal((await call(second.facts!.billing!.billingUrl, '/billing/v1/validate', keys.face!, identity)).body.apiStatus, 'Valid');
  assert.equal((await BillingStore.open(dataDir)).resources.length, 2);
});

test('R-SENT-9 report ids are de-duplicated per resource: another resource reusing an id is recorded, before and after a restart', async (t) => {
  const { base, key, dataDir, billing } = await startWithResource(t);
  const otherKey = await createResource(dataDir, 'sentiment');
  const shared = randomUUID();
  assert.equal((await call(base, '/billing/v1/usage', key, report(5, { reportId: shared }))).status, 200);
  assert.equal((await call(base, '/billing/v1/usage', otherKey, report(7, { reportId: shared }))).status, 200);
  await billing.close();
  const restarted = await startBilling({ ...quiet, dataDir });
  t.after(() => restarted.close());
  const again = restarted.facts!.billing!.billingUrl;
  assert.equal((await call(again, '/billing/v1/usage', key, report(5, { reportId: shared }))).status, 200, 'a retry is acknowledged');
  assert.equal((await call(again, '/billing/v1/usage', otherKey, report(7, { reportId: shared }))).status, 200, 'a retry is acknowledged');
  const totals = JSON.parse(await command(dataDir, ['usage', '--period', 'all', '--format', 'json'])) as { resourceName: string; quantity: number }[];
  assert.deepEqual(totals.map((x) => [x.resourceName, x.quantity]).sort(), [
    ['sentiment-1', 5],
    ['sentiment-2', 7],
  ]);
});

test('GET /billing/v1/usage (ours) answers the recorded counts per resource in time buckets, what the usage command prints; a bad query in the error shape', async (t) => {
  const { base, key, dataDir } = await startWithResource(t);
  const faceKey = await createResource(dataDir, 'face');
  const faceReport = report(4, { containerType: 'face', meters: [{ name: CONTAINER_KINDS.face.billedMeter, quantity: 4 }] });
  assert.equal((await call(base, '/billing/v1/usage', key, report(2))).status, 200);
  assert.equal((await call(base, '/billing/v1/usage', key, report(3))).status, 200);
  assert.equal((await call(base, '/billing/v1/usage', faceKey, faceReport)).status, 200);
  const get = async (search: string) => {
    const answer = await request(`${base}/billing/v1/usage${search}`);
    return { status: answer.statusCode, body: (await answer.body.json()) as { period: string; usage: Record<string, unknown>[] } & Record<string, unknown> };
  };
  for (const period of ['minute', 'hour', 'day', 'month', 'all']) {
    const answer = await get(`?period=${period}`);
    assert.equal(answer.status, 200);
    assert.equal(answer.body.period, period);
    assert.deepEqual(answer.body.usage, JSON.parse(await command(dataDir, ['usage', '--period', period, '--format', 'json'])));
  }
  const minutes = (await get('?period=minute&resource=sentiment-1')).body.usage;
  assert.deepEqual(
    minutes.map((u) => [u.resourceName, u.meter, u.quantity]),
    [['sentiment-1', METER, 5]],
  );
  assert.match(String(minutes[0]!.period), /^\d{4}-\d\d-\d\dT\d\d:\d\d$/);
  assert.equal((await get('')).body.period, 'hour');
  for (const search of ['?period=week', '?period=hour&period=day', '?resource=', '?secret=1']) {
    const answer = await get(search);
    assert.equal(answer.status, 400, search);
    assert.equal((answer.body.error as { code: string }).code, 'InvalidRequest', search);
  }
});
