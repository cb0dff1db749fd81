/**
 * The CLI and persistence: `offcloud hub device create` prints a connection
 * string; registry, twins and queued C2D messages survive a kill -9 of the
 * hub process.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { tempDataDir } from '../helpers/index.ts';
import { connectDevice, eventually, killHard, nextMessage, spawnHub } from './helpers.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = ['--import', 'tsx', 'src/cli.ts'];

test('R-TWIN-8 registry, twins and queued C2D messages survive kill -9; the CLI-made device keeps its key', async (t) => {
  const dataDir = await tempDataDir(t);
  const { stdout } = await promisify(execFile)(process.execPath, [...CLI, 'hub', 'device', 'create', 'cli-dev', '--data-dir', dataDir], { cwd: ROOT });
  const match = /^HostName=localhost;DeviceId=cli-dev;SharedAccessKey=([A-Za-z0-9+/=]{44})$/.exec(stdout.trim());
  assert.ok(match, stdout);
  const key = match[1]!;

  const first = await spawnHub({ dataDir });
  t.after(() => killHard(first.child));
  const device = await connectDevice(first.hub, 'cli-dev', key, { clean: false });
  await device.subscribeAsync(['$iothub/twin/res/#', 'devices/cli-dev/messages/devicebound/#'], { qos: 1 });
  const answer = nextMessage(device, '$iothub/twin/res/');
  await device.publishAsync('$iothub/twin/PATCH/properties/reported/?$rid=1', JSON.stringify({ firmware: '1.2.3', nested: { ok: true } }));
  assert.equal((await answer).topic, '$iothub/twin/res/204/?$rid=1&$version=2');
  const desired = await first.hub.rest('PATCH', '/twins/cli-dev', { properties: { desired: { interval: 30 } } });
  assert.equal(desired.status, 200);
  assert.equal((await first.hub.rest('PUT', '/devices/second', {})).status, 200);
  device.end(true);
  await eventually(async () => ((await first.hub.rest('GET', '/devices/cli-dev')).body as { connectionState: string }).connectionState === 'Disconnected' || undefined, 5000, 'device offline');
  assert.equal((await first.hub.rest('POST', '/devices/cli-dev/messages/devicebound', { body: 'queued before the crash' })).status, 201);
  await first.hub.close();
  await killHard(first.child);

  const second = await spawnHub({ dataDir });
  t.after(async () => {
    await second.hub.close();
    await killHard(second.child);
  });
  const twin = (await second.hub.rest('GET', '/twins/cli-dev')).body as { properties: { desired: Record<string, unknown>; reported: Record<string, unknown> } };
  assert.equal(twin.properties.reported.firmware, '1.2.3');
  assert.deepEqual(twin.properties.reported.nested, { ok: true });
  assert.equal(twin.properties.reported.$version, 2);
  assert.equal(twin.properties.desired.interval, 30);
  assert.equal(twin.properties.desired.$version, 2);
  const devices = ((await second.hub.rest('GET', '/devices')).body as { deviceId: string }[]).map((d) => d.deviceId);
  assert.deepEqual(devices, ['cli-dev', 'demo-device', 'second']);
  assert.equal(second.hub.ownerKey, first.hub.ownerKey, 'policy keys are kept');
  // The queued C2D message and the kept (clean=false) subscription survived too.
  let delivered!: Promise<{ payload: Buffer }>;
  const again = await connectDevice(second.hub, 'cli-dev', key, {
    clean: false,
    beforeConnect: (c) => {
      delivered = nextMessage(c, 'devices/cli-dev/messages/devicebound/');
    },
  });
  assert.equal((await delivered).payload.toString(), 'queued before the crash');
  await again.endAsync();
});
