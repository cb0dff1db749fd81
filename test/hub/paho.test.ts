/**
 * A second, independent client: Debian's python3-paho-mqtt speaking the raw
 * topics of §4.11 with the spec's username form `<host>/<id>/api-version=2016-11-14`,
 * with a SAS token or an X.509 client certificate.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { DEBIAN_PYTHON, debianProgram, tempDataDir } from '../helpers/index.ts';
import { issue } from './certificates.ts';
import { createSasToken } from '../../src/hub/domain/sas.ts';
import { eventually, startTestHub } from './helpers.ts';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('./paho_device.py', import.meta.url));
const hub = await startTestHub({ after });

interface Step {
  step: string;
  rc?: number;
  granted?: number[];
  topic?: string;
  body?: string;
  disconnect?: number | null;
  message?: unknown;
}

/** Runs the paho device with a SAS token of a new device, or, given `x509` files, with no password and that certificate. */
async function pahoDevice(deviceId: string, username: string, mode: 'twin' | 'no-api-version', x509?: { certFile: string; keyFile: string }): Promise<Step[]> {
  debianProgram('python3-paho-mqtt', '/usr/lib/python3/dist-packages/paho/mqtt/client.py');
  const password = x509 ? '' : createSasToken(`localhost/devices/${deviceId}`, await hub.createDevice(deviceId), Math.floor(Date.now() / 1000) + 600);
  const certificate = x509 ? [x509.certFile, x509.keyFile] : [];
  const { stdout } = await run(DEBIAN_PYTHON, [SCRIPT, 'localhost', String(hub.mqttPort), hub.caPath, deviceId, username, password, mode, ...certificate], {
    timeout: 30_000,
  });
  return stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Step);
}

test('R-TWIN-2 R-TWIN-6 R-TWIN-7 R-TWIN-8 R-TWIN-9 paho: reported PATCH answers 204 with rid and version, GET answers the twin', async () => {
  const steps = await pahoDevice('paho-1', 'localhost/paho-1/api-version=2016-11-14', 'twin');
  assert.deepEqual(steps[0], { step: 'connack', rc: 0 });
  assert.deepEqual(steps[1], { step: 'suback', granted: [0] });
  assert.deepEqual(steps[2], { step: 'patch', topic: '$iothub/twin/res/204/?$rid=patch-1&$version=2', body: '' });
  assert.deepEqual(steps[3], { step: 'patch', topic: '$iothub/twin/res/204/?$rid=patch-2&$version=3', body: '' });
  assert.equal(steps[4]!.topic, '$iothub/twin/res/200/?$rid=get-1');
  assert.deepEqual(JSON.parse(steps[4]!.body!), { desired: { $version: 1 }, reported: { fanSpeed: 3, $version: 3 } });
  assert.match(steps[5]!.topic!, /^\$iothub\/twin\/res\/400\/\?\$rid=bad-1$/);
  const error = JSON.parse(steps[5]!.body!) as { errorCode: number; message: string };
  assert.equal(error.errorCode, 400004);
  assert.match(error.message, /not valid JSON/);
  const { body } = await hub.rest('GET', '/twins/paho-1');
  assert.equal((body as { properties: { reported: { $version: number } } }).properties.reported.$version, 3, 'the malformed patch changed nothing');
});

test('R-TWIN-3 paho: a username without api-version connects, and its first twin operation disconnects it', async () => {
  const steps = await pahoDevice('paho-2', 'localhost/paho-2/', 'no-api-version');
  assert.deepEqual(steps[0], { step: 'connack', rc: 0 });
  assert.equal(steps[2]!.step, 'after-twin-op');
  assert.equal(steps[2]!.message, null, 'no twin response');
  assert.ok(typeof steps[2]!.disconnect === 'number' && steps[2]!.disconnect !== 0, 'the hub closed the connection (paho rc != 0)');
  await eventually(
    async () => {
      const { body } = await hub.rest('GET', '/devices/paho-2');
      return (body as { connectionState: string }).connectionState === 'Disconnected' ? true : undefined;
    },
    5000,
    'device shown disconnected',
  );
});

test('paho with a client certificate and no password: a selfSigned device connects and uses its twin', async (t) => {
  const dir = await tempDataDir(t);
  const device = await issue('CN=paho-x509');
  const certFile = join(dir, 'device.crt');
  const keyFile = join(dir, 'device.key');
  await Promise.all([writeFile(certFile, device.cert), writeFile(keyFile, device.key, { mode: 0o600 })]);
  const created = await hub.rest('PUT', '/devices/paho-x509', {
    deviceId: 'paho-x509',
    authentication: { type: 'selfSigned', x509Thumbprint: { primaryThumbprint: device.thumbprint } },
  });
  assert.equal(created.status, 200);
  const steps = await pahoDevice('paho-x509', 'localhost/paho-x509/?api-version=2021-04-12', 'twin', { certFile, keyFile });
  assert.deepEqual(steps[0], { step: 'connack', rc: 0 });
  assert.deepEqual(steps[2], { step: 'patch', topic: '$iothub/twin/res/204/?$rid=patch-1&$version=2', body: '' });

  // Another certificate for the same id is refused with CONNACK 5 (paho's rc 5: not authorised).
  const other = await issue('CN=paho-x509');
  await Promise.all([writeFile(certFile, other.cert), writeFile(keyFile, other.key, { mode: 0o600 })]);
  const refused = await pahoDevice('paho-x509', 'localhost/paho-x509/?api-version=2021-04-12', 'no-api-version', { certFile, keyFile });
  assert.deepEqual(refused[0], { step: 'connack', rc: 5 });
});
