/**
 * The containers' contract on a minimal container built only from
 * src/cognitive (what face and sentiment both use) and the real billing
 * endpoint: start-up checks, /status vocabulary, the 503 gate, recovery.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { withDefaults } from '../../src/common/config.ts';
import { StartupError } from '../../src/common/errors.ts';
import { createHttpServer, listen } from '../../src/common/http.ts';
import { createLogger } from '../../src/common/log.ts';
import {
  billingGate,
  CONTAINER_KINDS,
  containerOptions,
  openBillingConnection,
  registerContainerSurface,
  validateContainerStart,
} from '../../src/cognitive/index.ts';
import { startBilling } from '../../src/billing/server.ts';
import { BillingStore } from '../../src/billing/store.ts';
import { quiet, tempDataDir } from '../helpers/index.ts';

const logger = createLogger('silent', 'test');
const METER = CONTAINER_KINDS.face.billedMeter;

async function startMiniContainer(billingUrl: string, apiKey: string) {
  const options = withDefaults(containerOptions, { eula: 'accept', billing: billingUrl, apiKey, meteringIntervalMs: 60_000 });
  const connection = await openBillingConnection({ component: 'mini', kind: 'face', containerVersion: '0.0.1', options, logger, env: {} });
  const app = createHttpServer({ logger });
  registerContainerSurface(app, {
    connection,
    title: 'mini',
    version: '1',
    paths: { '/work': { post: { summary: 'work', responses: { '200': { description: 'ok' } } } } },
  });
  app.post('/work', { preHandler: billingGate(connection) }, async () => {
    connection.record({ [METER]: 1 });
    return { ok: true };
  });
  const url = await listen(app, { host: '127.0.0.1', port: 0, component: 'mini' });
  return {
    url,
    connection,
    close: async () => {
      await app.close();
      await connection.close();
    },
  };
}

async function getJson(url: string) {
  const response = await request(url);
  return { status: response.statusCode, headers: response.headers, body: (await response.body.json()) as Record<string, unknown> };
}

test('R-SENT-8 R-FACE-6 start-up names the missing parameter: Eula, Billing, ApiKey', () => {
  const full = { eula: 'accept', billing: 'http://127.0.0.1:5100', apiKey: 'k' };
  assert.throws(
    () => validateContainerStart('face', { ...full, eula: '' }, {}),
    (e: Error) => e instanceof StartupError && /Eula/.test(e.message),
  );
  assert.throws(() => validateContainerStart('face', { ...full, eula: 'yes' }, {}), /Eula must be "accept"/);
  assert.throws(() => validateContainerStart('face', { ...full, billing: '' }, {}), /missing start-up parameter Billing/);
  assert.throws(() => validateContainerStart('face', { ...full, billing: 'not a url' }, {}), /Invalid Billing Endpoint URI/);
  assert.throws(() => validateContainerStart('face', { ...full, apiKey: '' }, {}), /missing start-up parameter ApiKey/);
  // The containers' own environment variables fill what options leave empty.
  const fromEnv = validateContainerStart('face', { eula: '', billing: '', apiKey: '' }, { Eula: 'accept', Billing: 'http://127.0.0.1:5100/', ApiKey: 'k2' });
  assert.deepEqual(fromEnv, { billingUrl: 'http://127.0.0.1:5100', apiKey: 'k2' });
});

test('R-SENT-9 R-FACE-6 the gate follows billing: Valid serves, CouldNotConnect answers 503 with Retry-After, then recovers', async (t) => {
  const dataDir = await tempDataDir(t);
  let billing = await startBilling({ ...quiet, dataDir });
  const port = new URL(billing.facts!.billing!.billingUrl).port;
  const store = await BillingStore.open(dataDir);
  const { key } = await store.createResource({ kind: 'face' });
  // Reports come only when the test asks (the timer's interval is a minute), so each state is the test's doing.
  const mini = await startMiniContainer(billing.facts!.billing!.billingUrl, key);
  t.after(() => mini.close());
  t.after(() => billing.close());

  assert.equal((await getJson(`${mini.url}/status`)).body.apiStatus, 'Valid');
  assert.equal((await request(`${mini.url}/work`, { method: 'POST' })).statusCode, 200);
  await mini.connection.report();

  await billing.close();
  await mini.connection.report();
  const status = await getJson(`${mini.url}/status`);
  assert.equal(status.body.apiStatus, 'CouldNotConnect');
  const post = await request(`${mini.url}/work`, { method: 'POST' });
  assert.equal(post.statusCode, 503);
  assert.equal(post.headers['retry-after'], '60');
  assert.deepEqual(((await post.body.json()) as { error: { code: string } }).error.code, 'CouldNotConnect');

  billing = await startBilling({ ...quiet, dataDir, port: Number(port) });
  await mini.connection.report();
  assert.equal((await getJson(`${mini.url}/status`)).body.apiStatus, 'Valid');
  assert.equal((await request(`${mini.url}/work`, { method: 'POST' })).statusCode, 200);
  await mini.connection.report();
  const totals = (await BillingStore.open(dataDir)).totals('all');
  assert.deepEqual(
    totals.map((x) => [x.meter, x.quantity]),
    [[METER, 2]],
  );
});
