/**
 * The vendor's service SDK (azure-iothub), unmodified: Registry list, queries
 * (SELECT *, WHERE, COUNT, GROUP BY, devices.modules, paging) and statistics,
 * with a Plug and Play device's model id in its twin.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import deviceSdk from 'azure-iot-device';
import mqttTransport from 'azure-iot-device-mqtt';
import serviceSdk from 'azure-iothub';
import { eventually, routeServiceSdkTo, startTestHub, type TestHub } from './helpers.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const hub: TestHub = await startTestHub({ after });
after(routeServiceSdkTo(hub));
const serviceConnectionString = `HostName=localhost;SharedAccessKeyName=iothubowner;SharedAccessKey=${hub.ownerKey}`;
const registry = serviceSdk.Registry.fromConnectionString(serviceConnectionString);

async function tagged(deviceId: string, tags: Record<string, unknown>, status?: 'disabled') {
  await hub.createDevice(deviceId);
  if (status) await hub.rest('PUT', `/devices/${deviceId}`, { deviceId, status }, { 'if-match': '*' });
  const patched = await hub.rest('PATCH', `/twins/${deviceId}`, { tags }, { 'if-match': '*' });
  assert.equal(patched.status, 200);
}

await tagged('q-red-1', { color: 'red', floor: 1 });
await tagged('q-red-2', { color: 'red', floor: 2 });
await tagged('q-blue-3', { color: 'blue', floor: 3 }, 'disabled');
await hub.createDevice('q-red-1/sensor');
await hub.createDevice('q-blue-3/sensor');

test('Registry.list() (GET /devices/ with its trailing slash) lists the devices', async () => {
  const { responseBody: devices } = await registry.list();
  assert.deepEqual(devices.map((d) => d.deviceId).sort(), ['q-blue-3', 'q-red-1', 'q-red-2']);
  assert.equal(devices.find((d) => d.deviceId === 'q-blue-3')!.status, 'disabled');
});

test('createQuery: SELECT * with WHERE on tags, status and connectionState gives twins', async () => {
  const red = await registry.createQuery("SELECT * FROM devices WHERE tags.color = 'red' AND tags.floor > 1").nextAsTwin();
  assert.deepEqual(
    red.result.map((t) => t.deviceId),
    ['q-red-2'],
  );
  assert.equal(red.result[0]!.tags.color, 'red');
  const disabled = await registry.createQuery("SELECT * FROM devices WHERE status = 'disabled' OR tags.floor IN [7, 8]").next();
  assert.deepEqual(
    (disabled.result as { deviceId: string }[]).map((t) => t.deviceId),
    ['q-blue-3'],
  );
  const offline = await registry.createQuery("select * from devices where connectionState = 'Disconnected' and NOT (tags.color = 'blue')").next();
  assert.deepEqual((offline.result as { deviceId: string }[]).map((t) => t.deviceId).sort(), ['q-red-1', 'q-red-2']);
});

test('createQuery: COUNT(), GROUP BY and devices.modules', async () => {
  const count = await registry.createQuery('SELECT COUNT() AS numberOfDevices FROM devices').next();
  assert.deepEqual(count.result, [{ numberOfDevices: 3 }]);
  const grouped = await registry.createQuery('SELECT tags.color, COUNT() AS n FROM devices GROUP BY tags.color').next();
  assert.deepEqual(
    (grouped.result as { color: string; n: number }[]).sort((a, b) => a.color.localeCompare(b.color)),
    [
      { color: 'blue', n: 1 },
      { color: 'red', n: 2 },
    ],
  );
  const modules = await registry.createQuery("SELECT * FROM devices.modules WHERE devices.modules.moduleId = 'sensor' AND deviceId = 'q-red-1'").next();
  assert.deepEqual(
    (modules.result as { deviceId: string; moduleId: string }[]).map((m) => `${m.deviceId}/${m.moduleId}`),
    ['q-red-1/sensor'],
  );
});

test('createQuery pages by continuation token until hasMoreResults is false', async () => {
  const query = registry.createQuery('SELECT * FROM devices', 2);
  const seen: string[] = [];
  const pages: number[] = [];
  while (query.hasMoreResults) {
    const page = await query.nextAsTwin();
    pages.push(page.result.length);
    seen.push(...page.result.map((t) => t.deviceId));
  }
  assert.deepEqual(pages, [2, 1]);
  assert.deepEqual(seen.sort(), ['q-blue-3', 'q-red-1', 'q-red-2']);
});

test('bad queries answer 400 in the hub error shape and the API keeps serving', async () => {
  for (const query of [
    '',
    'SELECT',
    'SELECT * FROM nowhere',
    "SELECT * FROM devices WHERE tags.a = 'x",
    'SELECT * FROM devices WHERE ' + '('.repeat(200),
    'SELECT * FROM devices WHERE a ~ 1',
    'x'.repeat(9000),
  ]) {
    const answer = await hub.rest('POST', '/devices/query', { query });
    assert.equal(answer.status, 400, query.slice(0, 40));
    assert.match((answer.body as { Message: string }).Message, /^ErrorCode:ArgumentInvalid;/);
  }
  for (const body of [{ query: 5 }, [], 'not json']) assert.equal((await hub.rest('POST', '/devices/query', body)).status, 400);
  assert.equal((await hub.rest('POST', '/devices/query', { query: 'SELECT * FROM devices' }, { 'x-ms-continuation': 'bm90IG91cnM=' })).status, 400);
  assert.equal((await hub.rest('POST', '/devices/query', { query: 'SELECT * FROM devices' }, { 'x-ms-max-item-count': '-3' })).status, 400);
  const { responseBody: devices } = await registry.list();
  assert.equal(devices.length, 3);
});

test('getRegistryStatistics and GET /statistics/service count devices', async () => {
  const { responseBody: stats } = await registry.getRegistryStatistics();
  assert.deepEqual(stats, { totalDeviceCount: 3, enabledDeviceCount: 2, disabledDeviceCount: 1 });
  const service = await hub.rest('GET', '/statistics/service');
  assert.deepEqual(service.body, { connectedDeviceCount: 0 });
});

test("a Plug and Play device's model id (MQTT username) is in its twin and can be queried", async (t) => {
  const key = await hub.createDevice('pnp-thermostat');
  const client = deviceSdk.Client.fromConnectionString(hub.connectionString('pnp-thermostat', key), mqttTransport.Mqtt);
  await client.setOptions({ ca: hub.ca, modelId: 'dtmi:com:example:Thermostat;1' });
  await client.open();
  t.after(() => client.close());
  const { responseBody: twin } = await registry.getTwin('pnp-thermostat');
  assert.equal((twin as unknown as { modelId: string }).modelId, 'dtmi:com:example:Thermostat;1');
  const found = await registry.createQuery("SELECT * FROM devices WHERE modelId = 'dtmi:com:example:Thermostat;1'").next();
  assert.deepEqual(
    (found.result as { deviceId: string }[]).map((d) => d.deviceId),
    ['pnp-thermostat'],
  );
  const service = await eventually(
    async () => {
      const answer = await hub.rest('GET', '/statistics/service');
      return (answer.body as { connectedDeviceCount: number }).connectedDeviceCount === 1 ? answer : undefined;
    },
    10_000,
    'one connected device in the service statistics',
  );
  assert.ok(service);
  await hub.rest('DELETE', '/devices/pnp-thermostat');
});

test('`offcloud hub sas` prints a service token that the REST API takes (the curl way), per policy', async () => {
  const run = (...args: string[]) =>
    promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'hub', 'sas', '--data-dir', hub.dataDir, ...args], { cwd: ROOT });
  const owner = (await run()).stdout.trim();
  assert.match(owner, /^SharedAccessSignature sr=localhost&sig=.+&skn=iothubowner&se=\d+$/);
  assert.equal((await hub.rest('GET', '/devices/', undefined, { authorization: owner })).status, 200);
  const service = (await run('--policy', 'service', '--ttl', '60')).stdout.trim();
  assert.equal((await hub.rest('GET', '/statistics/service', undefined, { authorization: service })).status, 200);
  assert.equal((await hub.rest('GET', '/devices/', undefined, { authorization: service })).status, 401, 'service lacks registryRead');
  await assert.rejects(run('--policy', 'device'));
  await assert.rejects(run('--ttl', 'soon'));
});
