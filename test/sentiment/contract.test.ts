/** §4.12 and §5 with the sentiment container and the real billing endpoint (reference §6 tests 29–31). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'undici';
import { BillingStore } from '../../src/billing/store.ts';
import { SENTIMENT_METERS } from '../../src/sentiment/server.ts';
import { PACKAGE_ROOT } from '../../src/common/models.ts';
import { withDefaults } from '../../src/common/config.ts';
import { billing } from '../../src/billing/index.ts';
import { sentiment } from '../../src/sentiment/index.ts';
import { quiet, readMetric, tempDataDir } from '../helpers/index.ts';
import { SENTIMENT_V20, startSetup, status, statusBecomes } from './helpers.ts';
import { mergeFacts } from '../../src/common/facts.ts';

async function score(base: string, texts: string[]) {
  const documents = texts.map((text, i) => ({ id: String(i), language: 'en', text }));
  const response = await request(base + SENTIMENT_V20, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ documents }),
  });
  return { status: response.statusCode, headers: response.headers, body: (await response.body.json()) as Record<string, unknown> };
}

function startCli(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(eula|billing|apikey)$/i.test(k) && !k.startsWith('OFFCLOUD_SENTIMENT_')));
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(PACKAGE_ROOT, 'bin', 'offcloud.js'), 'sentiment', '--port', '0', ...args],
      { env, timeout: 120_000 },
      (err, _stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr }),
    );
  });
}

test('R-SENT-8 starting without Eula, Billing or ApiKey exits non-zero with a line naming it', async () => {
  const [noEula, noBilling, noKey, wrongEula] = await Promise.all([
    startCli(['Billing=http://127.0.0.1:9', 'ApiKey=k']),
    startCli(['Eula=accept', 'ApiKey=k']),
    startCli(['--eula', 'accept', '--billing', 'http://127.0.0.1:9']),
    startCli(['Eula=maybe', 'Billing=http://127.0.0.1:9', 'ApiKey=k']),
  ]);
  assert.equal(noEula.code, 1);
  assert.match(noEula.stderr, /missing start-up parameter Eula/);
  assert.equal(noBilling.code, 1);
  assert.match(noBilling.stderr, /missing start-up parameter Billing/);
  assert.equal(noKey.code, 1);
  assert.match(noKey.stderr, /missing start-up parameter ApiKey/);
  assert.equal(wrongEula.code, 1);
  assert.match(wrongEula.stderr, /Eula must be "accept"/);
});

test('R-SENT-8 a wrong key: billing refuses it, /status says Invalid, scoring is refused', async (t) => {
  const { base } = await startSetup(t, { apiKey: 'not-a-key-of-any-resource' });
  const now = await status(base);
  assert.equal(now.apiStatus, 'Invalid');
  const refused = await score(base, ['Lovely.']);
  assert.equal(refused.status, 401);
  assert.equal(refused.body.code, 'Invalid');
  assert.equal((await request(`${base}/ready`)).statusCode, 200, 'billing answered: the container is ready to pass its refusal on');
});

test('R-SENT-8 a key of a face resource is a Mismatch for the sentiment container', async (t) => {
  const { base } = await startSetup(t, {}, { kind: 'face' });
  assert.equal((await status(base)).apiStatus, 'Mismatch');
  assert.equal((await score(base, ['Lovely.'])).status, 401);
});

test('R-SENT-9 billing stopped: CouldNotConnect, 503 with Retry-After and /ready 503; billing back: scoring and readiness recover', async (t) => {
  const setup = await startSetup(t, { meteringIntervalMs: 100 });
  const ready = async () => (await request(`${setup.base}/ready`)).statusCode;
  assert.equal((await status(setup.base)).apiStatus, 'Valid');
  assert.equal(await ready(), 200);
  assert.equal((await score(setup.base, ['Fine.'])).status, 200);
  await setup.billing.close();
  await statusBecomes(setup.base, (s) => s.apiStatus === 'CouldNotConnect');
  const refused = await score(setup.base, ['Fine.']);
  assert.equal(refused.status, 503);
  assert.equal(refused.headers['retry-after'], '1');
  assert.equal(refused.body.code, 'CouldNotConnect');
  assert.equal(await ready(), 503, 'not ready while every scoring request gets 503');
  await setup.restartBilling();
  await statusBecomes(setup.base, (s) => s.apiStatus === 'Valid');
  assert.equal(await ready(), 200);
  assert.equal((await score(setup.base, ['Fine again.'])).status, 200);
});

test('R-SENT-9 after maxBillingFailures unreachable reports the container stops serving', async (t) => {
  const setup = await startSetup(t, { meteringIntervalMs: 50, maxBillingFailures: 3 });
  await setup.billing.close();
  await statusBecomes(setup.base, (s) => /stopped serving/.test(s.apiStatusMessage));
  await setup.restartBilling();
  const refused = await score(setup.base, ['Fine.']);
  assert.equal(refused.status, 503);
  assert.equal(refused.headers['retry-after'], undefined);
});

test('R-SENT-9 usage at the billing endpoint equals the documents scored and carries no text', async (t) => {
  const setup = await startSetup(t);
  const secret = 'zebra-quartz-unicorn';
  for (let i = 0; i < 3; i++) assert.equal((await score(setup.base, [`${secret} ${i} was great`, `${secret} awful`, ''])).status, 200);
  await setup.container.close(); // the last report goes out on close
  const store = await BillingStore.open(setup.dataDir);
  const totals = Object.fromEntries(store.totals('all').map((x) => [x.meter, x.quantity]));
  assert.deepEqual(totals, { [SENTIMENT_METERS.documents]: 6, [SENTIMENT_METERS.transactions]: 6 });
  const log = await readFile(join(setup.dataDir, 'billing', 'usage.jsonl'), 'utf8');
  assert.doesNotMatch(log, /zebra|great|awful/);
});

test('R-SENT-9 a resource over its quota: billing says OutOfQuota and scoring answers 403', async (t) => {
  const setup = await startSetup(t, { meteringIntervalMs: 100 }, { quota: 2 });
  assert.equal((await score(setup.base, ['One.', 'Two.'])).status, 200);
  await statusBecomes(setup.base, (s) => s.apiStatus === 'OutOfQuota');
  const refused = await score(setup.base, ['Three.']);
  assert.equal(refused.status, 403);
  assert.equal(refused.body.code, 'OutOfQuota');
});

test('R-SENT-8 under offcloud up the container takes the billing URL and the demo key from the billing component', async (t) => {
  const dataDir = await tempDataDir(t);
  const billingRunning = await billing.start(withDefaults(billing.options, { ...quiet, dataDir, demoResources: true }));
  t.after(() => billingRunning.close());
  const wired = sentiment.wireUp!(mergeFacts([billingRunning]), new Map([['billing', billingRunning]]));
  assert.deepEqual(wired, {
    eula: 'accept',
    billing: billingRunning.facts!.billing!.billingUrl,
    apiKey: billingRunning.facts!.billing!.demoApiKeys!.sentiment!,
  });
  const container = await sentiment.start(withDefaults(sentiment.options, { ...quiet, dataDir, ...wired }));
  t.after(() => container.close());
  assert.equal((await status(new URL(container.urls[0]!.url).origin)).apiStatus, 'Valid');
});

test('metrics: documents scored are counted as billed, with the request counts', async (t) => {
  const setup = await startSetup(t);
  assert.equal((await score(setup.base, ['A wonderful film.', 'Dull and far too long.', 'Fine.'])).status, 200);
  assert.equal((await score(setup.base, ['Again.'])).status, 200);
  assert.equal(await readMetric(setup.base, 'offcloud_sentiment_documents_total'), 4);
  assert.equal(await readMetric(setup.base, 'offcloud_http_requests_total', { route: SENTIMENT_V20, status: '200', component: 'sentiment' }), 2);
});
