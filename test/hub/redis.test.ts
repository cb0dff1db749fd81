/**
 * Scale-out: two hub processes sharing one Redis (started here on a loopback
 * port in a temp dir). A device on replica A gets C2D messages, desired
 * updates and method calls sent through replica B; state is shared.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { debianProgram, tempDataDir } from '../helpers/index.ts';
import { closedByHub, connectDevice, eventually, freePort, killHard, nextMessage, spawnHub } from './helpers.ts';

test('two replicas on one Redis: C2D, desired push and methods sent via B reach a device on A', async (t) => {
  const redisServer = debianProgram('redis-server', '/usr/bin/redis-server');
  const dir = await tempDataDir(t);
  const port = await freePort();
  const redis = spawn(redisServer, ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => killHard(redis));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    redis.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('Ready to accept connections')) resolve();
    });
    redis.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${out}`)));
  });
  const redisUrl = `redis://127.0.0.1:${port}`;
  const [a, b] = await Promise.all([spawnHub({ dataDir: dir, redisUrl }), spawnHub({ dataDir: dir, redisUrl })]);
  t.after(async () => {
    await Promise.all([a.hub.close(), b.hub.close()]);
    await Promise.all([killHard(a.child), killHard(b.child)]);
  });
  assert.equal(a.hub.ownerKey, b.hub.ownerKey, 'one set of policy keys');

  // The registry is shared: made through A, read through B.
  const key = await a.hub.createDevice('roamer');
  assert.equal((await b.hub.rest('GET', '/devices/roamer')).status, 200);

  const device = await connectDevice(a.hub, 'roamer', key);
  await device.subscribeAsync(
    ['devices/roamer/messages/devicebound/#', '$iothub/methods/POST/#', '$iothub/twin/PATCH/properties/desired/#', '$iothub/twin/res/#'],
    { qos: 1 },
  );
  await eventually(
    async () => ((await b.hub.rest('GET', '/devices/roamer')).body as { connectionState: string }).connectionState === 'Connected' || undefined,
    5000,
    'presence seen by B',
  );

  const c2d = nextMessage(device, 'devices/roamer/messages/devicebound/');
  assert.equal((await b.hub.rest('POST', '/devices/roamer/messages/devicebound', { body: 'via B' })).status, 201);
  assert.equal((await c2d).payload.toString(), 'via B');
  await eventually(
    async () => ((await b.hub.rest('GET', '/devices/roamer')).body as { cloudToDeviceMessageCount: number }).cloudToDeviceMessageCount === 0 || undefined,
    5000,
    'completed in Redis',
  );

  const desired = nextMessage(device, '$iothub/twin/PATCH/properties/desired/');
  await b.hub.rest('PATCH', '/twins/roamer', { properties: { desired: { mode: 'fast' } } });
  const push = await desired;
  assert.equal(push.topic, '$iothub/twin/PATCH/properties/desired/?$version=2');
  assert.deepEqual(JSON.parse(push.payload.toString()), { mode: 'fast', $version: 2 });

  device.on('message', (topic, payload) => {
    const match = /^\$iothub\/methods\/POST\/([^/]+)\/\?\$rid=(.+)$/.exec(topic);
    if (match) device.publish(`$iothub/methods/res/200/?$rid=${match[2]}`, JSON.stringify({ method: match[1], got: JSON.parse(payload.toString()) }));
  });
  const method = await b.hub.rest('POST', '/twins/roamer/methods', { methodName: 'blink', payload: { times: 2 }, responseTimeoutInSeconds: 5 });
  assert.deepEqual(method.body, { status: 200, payload: { method: 'blink', got: { times: 2 } } });

  // Reported properties written on A are read on B; telemetry sent to A is logged on B.
  const answer = nextMessage(device, '$iothub/twin/res/');
  await device.publishAsync('$iothub/twin/PATCH/properties/reported/?$rid=r1', JSON.stringify({ battery: 80 }));
  assert.equal((await answer).topic, '$iothub/twin/res/204/?$rid=r1&$version=2');
  assert.equal(((await b.hub.rest('GET', '/twins/roamer')).body as { properties: { reported: { battery: number } } }).properties.reported.battery, 80);
  await device.publishAsync('devices/roamer/messages/events/%24.mid=t1', 'hello', { qos: 1 });
  await eventually(
    async () => ((await b.hub.rest('GET', '/messages/events?deviceId=roamer')).body as { messages: unknown[] }).messages.length === 1 || undefined,
    5000,
    'telemetry on B',
  );

  // Connecting the same device to B closes its connection on A.
  const closedOnA = closedByHub(device);
  const onB = await connectDevice(b.hub, 'roamer', key);
  await closedOnA;
  // B shutting down (SIGTERM) clears the presence of its devices for every replica.
  const closedOnB = closedByHub(onB);
  const exited = new Promise((resolve) => b.child.once('exit', resolve));
  b.child.kill('SIGTERM');
  await Promise.all([closedOnB, exited]);
  assert.equal(((await a.hub.rest('GET', '/devices/roamer')).body as { connectionState: string }).connectionState, 'Disconnected');
});
