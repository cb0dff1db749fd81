/**
 * The console in a real browser (headless Debian chromium through
 * playwright-core) against real components: every page renders their data,
 * and what is done in a page reaches the component and its clients (the
 * vendor device SDK, the storage SDK). One browser and one set of components
 * for the whole file; screenshots go to test-artifacts/console/.
 */
import assert from 'node:assert/strict';
import { after, test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import deviceSdk from 'azure-iot-device';
import mqttTransport from 'azure-iot-device-mqtt';
import type { Page } from 'playwright-core';
import { ContainerSASPermissions } from '@azure/storage-blob';
import { Pool, request } from 'undici';
import { CONTAINER_KINDS } from '../../src/cognitive/protocol.ts';
import { deviceFilePath, readDevices } from '../../src/devices/store.ts';
import { startEtcd, uniqueServiceName } from '../devices/helpers.ts';
import { fivePeople, portrait } from '../face/images.ts';
import { blobService, Cleanup, factsOf, launchBrowser, screenshot, startNamed, startStack } from './harness.ts';
import { driven, pageChecks } from './pages.ts';

const { Client, Message } = deviceSdk;

const cleanup = new Cleanup(after);
const stack = await startStack(cleanup);
const browser = await launchBrowser(cleanup);
const { ca } = stack;
const checks = pageChecks(stack);

/**
 * A page closed when its test ends: Chromium keeps at most 6 connections to
 * one origin, and each open hub page holds one for its event stream.
 */
async function openPage(t: TestContext, name: string): Promise<Page> {
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(err.message));
  t.after(async () => {
    await page.close();
    assert.deepEqual(problems, [], `script errors on the ${name} page`);
  });
  await page.goto(`${stack.base}/#/${name}`);
  await page.waitForSelector(`main[data-page="${name}"]`);
  // What the page must show with real data: the same checks as the Firefox suite's.
  await checks[name]!(driven(page));
  return page;
}

/** The demo device through the vendor SDK, closed when its test ends (a second connection would take the first's place). */
async function openDevice(t: TestContext) {
  const client = Client.fromConnectionString(factsOf(stack).hub!.demoDevice!.connectionString, mqttTransport.Mqtt);
  await client.setOptions({ ca });
  await client.open();
  t.after(() => client.close());
  return client;
}

test('the overview lists every component with its health, URLs and keys, and serves the CA file', async (t) => {
  const page = await openPage(t, 'overview');
  const download = await page.evaluate(() => fetch('/api/ca.crt').then((r) => r.text()));
  assert.equal(download, ca);
  await screenshot(page, 'overview');
  // Phone width: one column, the pages behind a menu button, nothing wider than the screen.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.getByRole('button', { name: 'menu' }).click();
  await page.getByRole('link', { name: 'Device hub' }).waitFor();
  assert.ok(await page.evaluate(() => document.scrollingElement!.scrollWidth <= innerWidth + 1));
  await screenshot(page, 'overview-phone');
});

test('the pages are reachable from the keyboard alone', async (t) => {
  const page = await openPage(t, 'overview');
  await page.keyboard.press('Tab'); // the skip link
  await page.keyboard.press('Tab'); // Overview
  await page.keyboard.press('Tab'); // Device hub
  await page.keyboard.press('Enter');
  await page.waitForSelector('main[data-page="hub"]');
});

test('hub: telemetry sent by the vendor device SDK appears on the page within a second, with its properties', async (t) => {
  const device = await openDevice(t);
  const page = await openPage(t, 'hub');
  const message = new Message(JSON.stringify({ temperature: 23.25, unique: 'from-the-sdk' }));
  message.properties.add('alert', 'high');
  await device.sendEvent(message);
  const shown = page.locator('ol.telemetry li', { hasText: 'from-the-sdk' });
  await shown.waitFor({ timeout: 1000 });
  assert.match((await shown.textContent()) ?? '', /demo-device.*temperature.*alert=high/s);
  await page.getByRole('button', { name: 'open demo-device' }).click();
  await page.getByText('Twin of demo-device').waitFor();
  await screenshot(page, 'hub');
});

test('hub: a desired property edited in the page reaches the device, a C2D message and a direct method too', async (t) => {
  const device = await openDevice(t);
  const twin = await device.getTwin();
  const desired = new Promise<Record<string, unknown>>((resolve) => {
    twin.on('properties.desired', (patch: Record<string, unknown>) => {
      if (patch.interval === 42) resolve(patch);
    });
  });
  const c2d = new Promise<InstanceType<typeof Message>>((resolve) => device.on('message', resolve));
  device.onDeviceMethod('reboot', (methodRequest, response) => {
    response.send(200, { rebooting: true, delay: (methodRequest.payload as { delay: number }).delay }, () => {});
  });
  const page = await openPage(t, 'hub');
  await page.getByRole('button', { name: 'open demo-device' }).click();

  await page.getByLabel(/Desired properties to merge/).fill('{"interval": 42}');
  await page.getByRole('button', { name: 'Update desired' }).click();
  assert.equal((await desired).interval, 42);
  await page.getByText(/Desired properties now at version \d+/).waitFor();

  await page.getByLabel('Body').fill('hello device');
  await page.getByLabel(/^Properties/).fill('kind=greeting');
  await page.getByRole('button', { name: 'Send' }).click();
  const received = await c2d;
  assert.equal(received.getData().toString(), 'hello device');
  assert.equal(received.properties.getValue('kind'), 'greeting');
  await device.complete(received);

  await page.getByLabel('Method name').fill('reboot');
  await page.getByLabel('Payload (JSON)').fill('{"delay": 5}');
  await page.getByRole('button', { name: 'Invoke' }).click();
  await page.getByText('Status 200').waitFor();
  assert.match((await page.locator('form[aria-label="invoke a direct method"]').textContent()) ?? '', /"rebooting": true/);
});

test("hub: bad input in its forms shows the reason, the hub's own message when the hub refuses", async (t) => {
  const page = await openPage(t, 'hub');
  await page.getByRole('button', { name: 'open demo-device' }).click();
  await page.getByLabel(/Desired properties to merge/).fill('{not json');
  await page.getByRole('button', { name: 'Update desired' }).click();
  await page.getByRole('alert').filter({ hasText: 'desired properties are JSON' }).waitFor();
  // A name the hub does not allow in a twin: its message comes back as it wrote it.
  await page.getByLabel(/Desired properties to merge/).fill('{"bad name": 1}');
  await page.getByRole('button', { name: 'Update desired' }).click();
  await page
    .getByRole('alert')
    .filter({ hasText: /^400 · ErrorCode:/ })
    .waitFor();
  await page.getByLabel('Method name').fill('nobody-listens');
  await page.getByRole('button', { name: 'Invoke' }).click();
  await page
    .getByRole('alert')
    .filter({ hasText: /ErrorCode:/ })
    .last()
    .waitFor();
  await screenshot(page, 'hub-errors');
});

test("storage: a container made and a blob uploaded in the page are read back by the storage SDK; a bad name shows storage's message", async (t) => {
  const page = await openPage(t, 'storage');
  await page.getByLabel('New container').fill('photos');
  await page.getByRole('button', { name: 'Create' }).click();
  await page.getByText('Blobs in photos').waitFor();
  const content = Buffer.from('a blob from the browser\n'.repeat(100));
  await page.getByLabel('File', { exact: true }).setInputFiles({ name: 'note.txt', mimeType: 'text/plain', buffer: content });
  await page.getByLabel('Blob name').fill('dir/note.txt');
  await page.getByRole('button', { name: 'Upload' }).click();
  await page.getByRole('link', { name: 'dir/note.txt' }).waitFor();

  const blob = blobService(stack).getContainerClient('photos').getBlobClient('dir/note.txt');
  assert.deepEqual(await blob.downloadToBuffer(), content);
  assert.equal((await blob.getProperties()).contentType, 'text/plain');

  await page.getByRole('button', { name: 'properties' }).click();
  await page.getByText('Properties of dir/note.txt').waitFor();
  await screenshot(page, 'storage');

  await page.getByLabel('New container').fill('Not_A_Name');
  await page.getByRole('button', { name: 'Create' }).click();
  await page
    .getByRole('alert')
    .filter({ hasText: /^400 · InvalidResourceName/ })
    .waitFor();
  await page.getByRole('button', { name: 'delete dir/note.txt' }).click();
  await page.getByText('No blobs.').waitFor();
  assert.equal(await blob.exists(), false);
});

test('storage: a blob named ../../victim, in either spelling, is refused by storage and by the console, and nothing else is touched', async (t) => {
  const service = blobService(stack);
  const victim = service.getContainerClient('victim');
  await victim.create();
  await victim.getBlockBlobClient('kept.txt').upload('kept', 4);
  const names = service.getContainerClient('names');
  await names.create();
  // Sent as written (the SDK's and undici's URL parsing would resolve the dot segments first).
  const sas = new URL(await names.generateSasUrl({ permissions: ContainerSASPermissions.parse('w'), expiresOn: new Date(Date.now() + 3_600_000) }));
  const raw = new Pool(sas.origin, { connect: { ca } });
  t.after(() => raw.close());
  for (const spelling of ['%2E%2E/%2E%2E/victim', '../../victim']) {
    const put = await raw.request({ method: 'PUT', path: `${sas.pathname}/${spelling}${sas.search}`, headers: { 'x-ms-blob-type': 'BlockBlob' }, body: 'odd' });
    await put.body.dump();
    assert.equal(put.statusCode, 400, spelling);
    assert.equal(put.headers['x-ms-error-code'], 'InvalidUri', spelling);
  }

  const page = await openPage(t, 'storage');
  const answer = await page.evaluate(async () => {
    const sent = await fetch(`/api/storage/containers/names/blob?name=${encodeURIComponent('../../victim')}`, {
      method: 'DELETE',
      headers: { 'x-offcloud-console': '1' },
    });
    return { status: sent.status, body: await sent.text() };
  });
  assert.equal(answer.status, 400, answer.body);
  assert.match(answer.body, /\.\.\/\.\.\/victim.+segment/);
  assert.equal((await victim.getBlobClient('kept.txt').downloadToBuffer()).toString(), 'kept');
  const listed: string[] = [];
  for await (const blob of names.listBlobsFlat()) listed.push(blob.name);
  assert.deepEqual(listed, []);
});

test("storage: a console given storage's plain-HTTP connection string creates, uploads and lists through it", async () => {
  const plain = factsOf(stack).storage!.httpConnectionString;
  const running = await startNamed(cleanup, 'console', new Map(stack.started), { dataDir: stack.dataDir, storageConnectionString: plain });
  const base = running.urls[0]!.url.replace(/\/$/, '');
  const call = async (method: 'GET' | 'PUT', path: string, body: string | null = null) => {
    const answer = await request(`${base}${path}`, { method, headers: { 'x-offcloud-console': '1', 'content-type': 'text/plain' }, body });
    return { status: answer.statusCode, body: await answer.body.text() };
  };
  assert.equal((await call('PUT', '/api/storage/containers/over-http')).status, 201);
  assert.equal((await call('PUT', '/api/storage/containers/over-http/blob?name=a.txt', 'sent over http')).status, 201);
  const listed = await call('GET', '/api/storage/containers');
  assert.equal(listed.status, 200, listed.body);
  assert.ok((JSON.parse(listed.body) as { name: string }[]).some((c) => c.name === 'over-http'));
  const blob = blobService(stack).getContainerClient('over-http').getBlobClient('a.txt');
  assert.equal((await blob.downloadToBuffer()).toString(), 'sent over http');
  assert.equal((await call('GET', '/api/storage/containers/over-http/blob?name=a.txt')).body, 'sent over http');
});

test('identity: a token got in one click verifies against the JWKS; a changed one does not, and says why', async (t) => {
  const page = await openPage(t, 'identity');
  await page.getByLabel('Client secret').fill('wrong secret');
  await page.getByRole('button', { name: 'Get token' }).click();
  await page.getByRole('alert').filter({ hasText: 'invalid_client' }).waitFor();

  await page.getByLabel('Client secret').fill(stack.started.get('identity')!.facts!.identity!.demoClient!.clientSecret);
  await page.getByRole('button', { name: 'Get token' }).click();
  await page.getByText('Token issued').waitFor();
  await page.getByRole('button', { name: 'Decode and verify' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: /^Verifies: signature and lifetime verified/ })
    .waitFor();
  assert.match((await page.locator('section', { hasText: 'Token decoder' }).textContent()) ?? '', /"aud": "api:\/\/offcloud-demo-api"|"roles"/);
  await screenshot(page, 'identity');

  const token = await page.getByLabel('Token (JWT)').inputValue();
  const [head, body] = token.split('.');
  const claims = JSON.parse(Buffer.from(body!, 'base64url').toString());
  const forged = `${head}.${Buffer.from(JSON.stringify({ ...claims, roles: ['Admin'] })).toString('base64url')}.${token.split('.')[2]}`;
  await page.getByLabel('Token (JWT)').fill(forged);
  await page.getByRole('button', { name: 'Decode and verify' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: /^Does not verify: ERR_JWS_SIGNATURE_VERIFICATION_FAILED/ })
    .waitFor();

  await page.getByLabel('Token (JWT)').fill('not a token');
  await page.getByRole('button', { name: 'Decode and verify' }).click();
  await page
    .getByRole('alert')
    .filter({ hasText: /^400 · InvalidInput: not a JWT/ })
    .waitFor();
});

test('gateway: services, routes, consumers and plugins from the admin API', async (t) => {
  await screenshot(await openPage(t, 'gateway'), 'gateway');
});

test("scripts: a script run from the page streams its lines in order; a bad parameter shows the server's message", async (t) => {
  const page = await openPage(t, 'scripts');
  await page.getByRole('button', { name: 'open /hello' }).click();
  await page.getByLabel(/Parameters/).fill('name=console');
  await page.getByRole('button', { name: 'Run /hello (GET)' }).click();
  const output = page.getByLabel('output');
  // The first line is on the page before the script has printed its last one.
  await output.filter({ hasText: 'hello console' }).waitFor();
  assert.doesNotMatch((await output.textContent()) ?? '', /third line/);
  await page.getByText('exit 0 (exited)').waitFor();
  assert.equal(await output.textContent(), 'hello console\nsecond line\nthird line\n');
  await screenshot(page, 'scripts');

  await page.getByLabel(/Parameters/).fill('1x=2');
  await page.getByRole('button', { name: 'Run /hello (GET)' }).click();
  await page
    .getByRole('alert')
    .filter({ hasText: /^400 · InvalidParameter/ })
    .waitFor();
});

test('models: a photo dropped on the face page shows as many rectangles as the face API returns; scoring shows the top 5; a text gets its sentiment, and the usage the container reported to billing is charted', async (t) => {
  const photo = await fivePeople();
  const detect = await request(`${stack.started.get('face')!.urls[0]!.url}?returnFaceAttributes=age,gender`, {
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream' },
    body: photo,
  });
  const expected = ((await detect.body.json()) as unknown[]).length;
  assert.ok(expected > 0);
  const page = await openPage(t, 'models');
  // A drop as the browser makes it: a DataTransfer holding the file, dispatched on the drop zone.
  const dataTransfer = await page.evaluateHandle(
    (bytes) => {
      const transfer = new DataTransfer();
      transfer.items.add(new File([new Uint8Array(bytes)], 'five.jpg', { type: 'image/jpeg' }));
      return transfer;
    },
    [...photo],
  );
  await page.dispatchEvent('[data-drop="face-file"]', 'drop', { dataTransfer });
  await page
    .getByRole('status')
    .filter({ hasText: `${expected} faces found.` })
    .waitFor();
  assert.equal(await page.locator('svg.faces rect.face').count(), expected);

  await page.locator('#scoring-file').setInputFiles({ name: 'portrait.jpg', mimeType: 'image/jpeg', buffer: await portrait() });
  const classes = page.getByRole('table', { name: 'top classes' });
  await classes.waitFor();
  const probabilities = await classes.locator('meter').evaluateAll((meters) => meters.map((m) => Number((m as HTMLMeterElement).value)));
  assert.equal(probabilities.length, 5);
  assert.deepEqual(
    probabilities,
    [...probabilities].sort((a, b) => b - a),
  );
  await page
    .getByRole('status')
    .filter({ hasText: /^inference [\d.]+ ms/ })
    .waitFor();

  await page.getByLabel('Text', { exact: true }).fill('What a wonderful, friendly and helpful team!');
  await page.getByRole('button', { name: 'Score' }).click();
  await page.getByLabel('sentiment score').waitFor();
  assert.ok(Number(await page.getByLabel('sentiment score').getAttribute('value')) > 0.5);

  // The sentiment container reports what it scored to billing; the chart draws what billing recorded.
  const usageUrl = `${stack.started.get('billing')!.facts!.billing!.billingUrl}/billing/v1/usage?period=minute&resource=demo-sentiment`;
  const meter = CONTAINER_KINDS.sentiment.billedMeter;
  let recorded = 0;
  for (let i = 0; recorded === 0; i++) {
    assert.ok(i < 100, 'the sentiment container never reported its usage');
    await sleep(100);
    const { usage } = (await (await request(usageUrl)).body.json()) as { usage: { meter: string; quantity: number }[] };
    recorded = usage.filter((u) => u.meter === meter).reduce((sum, u) => sum + u.quantity, 0);
  }
  await page.getByRole('button', { name: 'refresh', exact: true }).click();
  const chart = page.locator(`figure[aria-label="usage of demo-sentiment (${meter})"][data-total="${recorded}"]`);
  await chart.waitFor();
  const bars = await chart.locator('rect.bar').evaluateAll((rects) => rects.map((r) => Number(r.getAttribute('data-quantity'))));
  assert.equal(
    bars.reduce((a, b) => a + b, 0),
    recorded,
  );
  await screenshot(page, 'models');

  await page.getByLabel('Language').fill('xx');
  await page.getByRole('button', { name: 'Score' }).click();
  await page
    .getByRole('alert')
    .filter({ hasText: /language/i })
    .waitFor();
  await page.locator('#face-file').setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('not a photo') });
  await page
    .getByRole('alert')
    .filter({ hasText: /^400 · InvalidImage/ })
    .waitFor();
  await page.locator('#scoring-file').setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('not a photo') });
  await page.getByRole('alert').filter({ hasText: 'notes.txt is not an image the browser can read' }).waitFor();
});

test('devices: the active flag toggled in the page is what DevSvc (gRPC) and the data service answer next; an unknown or bad name gets their answers', async (t) => {
  const page = await openPage(t, 'devices');
  const devices = page.getByRole('table', { name: 'devices' });
  const flag = devices.getByRole('row', { name: /sensor-2/ }).getByRole('checkbox');
  const before = await flag.isChecked();
  await flag.click();
  await devices
    .getByRole('row', { name: /sensor-2/ })
    .getByRole('checkbox', { checked: !before })
    .waitFor();
  await page.getByLabel('Device', { exact: true }).fill('sensor-2');
  // DevSvc rereads the file when it changes: ask until it answers the new flag.
  const want = !before ? 'is active' : 'is inactive';
  for (let i = 0; ; i++) {
    await page.getByRole('button', { name: 'Look up' }).click();
    await page.getByLabel('DevSvc answer').waitFor();
    if ((await page.getByLabel('DevSvc answer').textContent())?.includes(want)) break;
    assert.ok(i < 50, `DevSvc never answered "${want}"`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.match((await page.getByLabel('data service answer').textContent()) ?? '', new RegExp(String(!before)));
  await screenshot(page, 'devices');

  await page.getByLabel('Device', { exact: true }).fill('no-such-device');
  await page.getByRole('button', { name: 'Look up' }).click();
  await page.getByLabel('DevSvc answer').getByText('does not know this device').waitFor();
  await page.getByLabel('Device', { exact: true }).fill('bad name?');
  await page.getByRole('button', { name: 'Look up' }).click();
  await page
    .getByLabel('data service answer')
    .getByRole('alert')
    .filter({ hasText: /^400 · invalid device name/ })
    .waitFor();
});

test('the console API refuses calls from other sites, paths out of a component, and answers bad bodies in its own shape', async () => {
  const call = (path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) =>
    request(`${stack.base}${path}`, { method: (init.method ?? 'GET') as 'GET', headers: init.headers ?? {}, body: init.body ?? null });
  const expect = async (answer: Awaited<ReturnType<typeof call>>, status: number, code: string) => {
    assert.equal(answer.statusCode, status);
    assert.equal(((await answer.body.json()) as { error: { code: string } }).error.code, code);
  };
  await expect(await call('/api/hub/devices/x', { method: 'DELETE' }), 403, 'ForeignRequest');
  await expect(await call('/api/overview', { headers: { 'sec-fetch-site': 'cross-site' } }), 403, 'ForeignRequest');
  await expect(await call('/api/overview', { headers: { host: 'attacker.example:8090' } }), 403, 'ForeignRequest');
  await expect(await call('/api/hub/..%2f..%2fadmin'), 400, 'InvalidInput');
  await expect(await call('/api/gateway/services', { method: 'POST', headers: { 'x-offcloud-console': '1' }, body: '{}' }), 400, 'InvalidInput');
  const json = { 'x-offcloud-console': '1', 'content-type': 'application/json' };
  await expect(await call('/api/identity/decode', { method: 'POST', headers: json, body: '{"token": 5}' }), 400, 'InvalidInput');
  await expect(await call('/api/identity/decode', { method: 'POST', headers: json, body: '{broken' }), 400, 'InvalidRequest');
  await expect(
    await call('/api/identity/decode', { method: 'POST', headers: json, body: JSON.stringify({ token: 'x'.repeat(33 * 1024 * 1024) }) }),
    413,
    'InvalidRequest',
  );
  await expect(await call('/api/nothing-here'), 404, 'NotFound');
  assert.equal((await call('/assets/../../package.json')).statusCode, 404);
  assert.equal((await call('/api/overview')).statusCode, 200);
});

test('bound off loopback, the console wants its login token: a wrong one is refused, the right one opens it', async (t) => {
  // 127.0.0.2 is this machine, but not a loopback address the console trusts without a login.
  const running = await startNamed(cleanup, 'console', new Map(stack.started), { host: '127.0.0.2', dataDir: stack.dataDir });
  const token = running.facts!.console!.loginToken!;
  const base = running.urls[0]!.url.replace(/\/$/, '');
  assert.equal((await request(`${base}/api/overview`)).statusCode, 401);

  const page = await browser.newPage();
  t.after(() => page.close());
  await page.goto(`${base}/`);
  await page.getByLabel(/Login token/).fill(`${token}x`);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('alert').filter({ hasText: '401 · LoginRequired: wrong login token' }).waitFor();
  assert.equal(await page.evaluate(() => fetch('/api/overview').then((r) => r.status)), 401);
  await screenshot(page, 'login-refused');

  await page.getByLabel(/Login token/).fill(token);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForSelector('main[data-page="overview"]');
  assert.equal(await page.evaluate(() => fetch('/api/overview').then((r) => r.status)), 200);
});

test('devices: every DevSvc replica in the registry (etcd) is listed with its address, health and what it answers for each device', async (t) => {
  const etcd = await startEtcd({ after: (fn) => cleanup.add(fn) }, stack.dataDir);
  const registry = { registry: 'etcd', registryAddress: [etcd], serviceName: uniqueServiceName(), dataDir: stack.dataDir };
  const replicas = [await startNamed(cleanup, 'devsvc', new Map(), registry), await startNamed(cleanup, 'devsvc', new Map(), registry)];
  const running = await startNamed(cleanup, 'console', new Map(stack.started), registry);
  const page = await browser.newPage();
  t.after(() => page.close());
  await page.goto(`${running.urls[0]!.url}#/devices`);
  const table = page.getByRole('table', { name: 'replicas' });
  await table.locator('tbody tr').nth(1).waitFor();
  const rows = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...(tr as HTMLTableRowElement).cells].map((td) => td.textContent ?? '')));
  assert.deepEqual(rows.map(([, address]) => address).sort(), replicas.map((r) => r.facts!.devsvc!.address).sort());
  const devices = await readDevices(deviceFilePath(stack.dataDir), false);
  assert.ok(devices.length > 1);
  for (const [node, , health, answers] of rows) {
    assert.match(node!, new RegExp(`^${registry.serviceName}-`));
    assert.equal(health, 'SERVING');
    assert.equal(
      answers,
      `${devices.filter((d) => d.active).length} active of ${devices.length}${devices.map((d) => `${d.name} ${d.active ? 'active' : 'inactive'}`).join('')}`,
    );
  }
  await screenshot(page, 'devices-replicas');
});
