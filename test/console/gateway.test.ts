/**
 * The console's gateway page in a real browser (headless Debian chromium
 * through playwright-core) against a real gateway, user API and console:
 * requests made through the gateway appear live with their status and
 * consumer, and a consumer's rate-limit state counts them. Only the
 * components the page needs are started (the whole stack is console.test.ts's).
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { Page } from 'playwright-core';
import { request } from 'undici';
import { stringify } from 'yaml';
import type { RunningComponent } from '../../src/common/component.ts';
import { tempDataDir } from '../helpers/index.ts';
import { Cleanup, launchBrowser, screenshot, startNamed } from './harness.ts';

const YEAR_LIMIT = 50;
const KEY = 'demo-key';

const cleanup = new Cleanup(after);
const dataDir = await tempDataDir({ after: () => {} });
const started = new Map<string, RunningComponent>();
const users = await startNamed(cleanup, 'users', started, { dataDir });
const config = join(dataDir, 'kong.yml');
await writeFile(
  config,
  stringify({
    _format_version: '3.0',
    services: [
      {
        name: 'users',
        url: users.facts!.users!.usersUrl,
        routes: [{ name: 'users', paths: ['/users'], methods: ['GET'] }],
        plugins: [{ name: 'key-auth' }, { name: 'rate-limiting', config: { minute: 20, year: YEAR_LIMIT, policy: 'local' } }],
      },
    ],
    consumers: [{ username: 'demo', keyauth_credentials: [{ key: KEY }] }],
  }),
);
const gateway = await startNamed(cleanup, 'gateway', started, { dataDir, httpsPort: 0, adminPort: 0, declarativeConfig: config });
const consoleApp = await startNamed(cleanup, 'console', started, { dataDir });
const browser = await launchBrowser(cleanup);
const proxy = gateway.facts!.gateway!.proxyUrl;

async function throughGateway(headers: Record<string, string>): Promise<{ status: number; requestId: string }> {
  const res = await request(`${proxy}/users`, { headers });
  await res.body.dump();
  return { status: res.statusCode, requestId: String(res.headers['x-kong-request-id']) };
}

async function openGatewayPage(): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(err.message));
  cleanup.add(() => page.close());
  await page.goto(`${consoleApp.urls[0]!.url.replace(/\/$/, '')}/#/gateway`);
  await page.waitForSelector('main[data-page="gateway"]');
  return { page, problems };
}

test("gateway page: requests made through the gateway appear live with status and consumer; the consumer's remaining count is its limit minus its requests", async () => {
  const { page, problems } = await openGatewayPage();
  await page.getByRole('table', { name: 'recent requests' }).waitFor();

  // Made after the page opened: they arrive by the page's own refresh.
  const accepted = await throughGateway({ apikey: KEY });
  const refused = await throughGateway({});
  assert.deepEqual([accepted.status, refused.status], [200, 401]);
  const row = (id: string) => page.locator(`tr[data-request-id="${id}"]`);
  await row(accepted.requestId).waitFor();
  const cells = async (id: string) => (await row(id).locator('td').allTextContents()).slice(1);
  const shown = await cells(accepted.requestId);
  assert.deepEqual(shown.slice(0, 6), ['GET', '/users', 'users', 'users', 'demo', '200']);
  assert.match(shown[6]!, /^\d+(\.\d+)? ms$/);
  await row(refused.requestId).waitFor();
  assert.deepEqual((await cells(refused.requestId)).slice(0, 6), ['GET', '/users', 'users', 'users', '-', '401']);

  // N requests of the consumer in all (the refused one was not counted: key-auth answered first).
  const n = 5;
  for (let i = 1; i < n; i++) assert.equal((await throughGateway({ apikey: KEY })).status, 200);
  await page.getByLabel('Consumer (username or id)').fill('demo');
  await page.getByRole('button', { name: 'Show limits' }).click();
  const year = page.getByRole('table', { name: 'rate limits of demo' }).locator('tr[data-period="year"]');
  await year
    .locator('td[data-field="remaining"]')
    .filter({ hasText: new RegExp(`^${YEAR_LIMIT - n}$`) })
    .waitFor();
  assert.equal(await year.locator('td[data-field="limit"]').textContent(), String(YEAR_LIMIT));
  assert.equal(await year.locator('td[data-field="used"]').textContent(), String(n));
  // One more request: the table follows without a click.
  assert.equal((await throughGateway({ apikey: KEY })).status, 200);
  await year
    .locator('td[data-field="remaining"]')
    .filter({ hasText: new RegExp(`^${YEAR_LIMIT - n - 1}$`) })
    .waitFor();
  await screenshot(page, 'gateway-traffic');

  // Bad input: the admin API's own message.
  await page.getByLabel('Consumer (username or id)').fill('nobody');
  await page.getByRole('button', { name: 'Show limits' }).click();
  await page.getByRole('alert').filter({ hasText: '404 · Not found: no consumer has the id or username "nobody"' }).waitFor();
  assert.deepEqual(problems, []);
});

test("the console's health probes leave no 404 in the gateway's recent requests: the admin API's GET /status says the gateway is up", async () => {
  const { page, problems } = await openGatewayPage();
  for (let round = 0; round < 2; round++) {
    const overview = (await page.evaluate(() => fetch('/api/overview').then((r) => r.json()))) as {
      components: { name: string; health: string; ready: string }[];
    };
    const shown = overview.components.find((c) => c.name === 'gateway');
    assert.deepEqual([shown?.health, shown?.ready], ['up', 'up']);
  }
  const answer = await request(`${gateway.facts!.gateway!.adminUrl}/_offcloud/requests?size=1000`);
  const { data } = (await answer.body.json()) as { data: { path: string; status: number }[] };
  assert.deepEqual(
    data.filter((r) => r.status === 404 || r.path === '/health' || r.path === '/ready'),
    [],
    'no probe reached the proxy',
  );
  assert.deepEqual(problems, []);
});
