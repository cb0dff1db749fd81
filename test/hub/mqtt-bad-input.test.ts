/**
 * Bad input on the device side, with mqtt.js as a hostile device: each is
 * refused as the reference says, the hub keeps serving, stored twins stay.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import deviceSdk from 'azure-iot-device';
import mqttTransport from 'azure-iot-device-mqtt';
import { createSasToken } from '../../src/hub/domain/sas.ts';
import { closedByHub, connectDevice, eventually, nextMessage, startTestHub } from './helpers.ts';

const hub = await startTestHub({ after });
const inAMinute = () => Math.floor(Date.now() / 1000) + 60;

async function reportedOf(deviceId: string): Promise<Record<string, unknown>> {
  const { body } = await hub.rest('GET', `/twins/${deviceId}`);
  return (body as { properties: { reported: Record<string, unknown> } }).properties.reported;
}

async function twinDevice(deviceId: string) {
  const key = await hub.createDevice(deviceId);
  const client = await connectDevice(hub, deviceId, key);
  await client.subscribeAsync('$iothub/twin/res/#', { qos: 0 });
  const patch = async (rid: string, body: string | Buffer) => {
    const answer = nextMessage(client, `$iothub/twin/res/`);
    await client.publishAsync(`$iothub/twin/PATCH/properties/reported/?$rid=${rid}`, body, { qos: 0 });
    const { topic, payload } = await answer;
    return { topic, body: payload.length ? (JSON.parse(payload.toString()) as { errorCode: number; message: string }) : undefined };
  };
  return { key, client, patch };
}

test('R-TWIN-2 wrong, expired or foreign SAS tokens get CONNACK 5', async () => {
  const key = await hub.createDevice('bad-sas');
  const otherKey = await hub.createDevice('bad-sas-other');
  const cases: Record<string, string> = {
    'wrong key': createSasToken('localhost/devices/bad-sas', otherKey, inAMinute()),
    expired: createSasToken('localhost/devices/bad-sas', key, Math.floor(Date.now() / 1000) - 1),
    'other device resource': createSasToken('localhost/devices/bad-sas-other', key, inAMinute()),
    'not a token': 'hunter2',
    'broken encoding': 'SharedAccessSignature sr=%ZZ&sig=abc&se=99999999999',
  };
  for (const [name, password] of Object.entries(cases)) {
    await assert.rejects(connectDevice(hub, 'bad-sas', key, { password }), (err: Error & { code?: number }) => {
      assert.equal(err.code, 5, name);
      return true;
    });
  }
  await assert.rejects(connectDevice(hub, 'nobody', key), { code: 5 });
  await assert.rejects(connectDevice(hub, 'bad-sas', key, { username: 'otherhub.example/bad-sas/?api-version=2021-04-12' }), { code: 5 });
  // The vendor SDK sees the refusal as UnauthorizedError, without retrying.
  const sdk = deviceSdk.Client.fromConnectionString(hub.connectionString('bad-sas', otherKey), mqttTransport.Mqtt);
  await sdk.setOptions({ ca: hub.ca });
  sdk.on('error', () => undefined);
  await assert.rejects(sdk.open(), { name: 'UnauthorizedError' });
  // A disabled device is refused too.
  const disabled = await hub.rest('PUT', '/devices/bad-sas', { status: 'disabled' }, { 'if-match': '*' });
  assert.equal(disabled.status, 200);
  await assert.rejects(connectDevice(hub, 'bad-sas', key), { code: 5 });
});

test('R-TWIN-2 the username may carry any api-version, with or without ?, with extra parameters', async () => {
  const key = await hub.createDevice('usernames');
  for (const username of [
    'localhost/usernames/api-version=2016-11-14',
    'localhost/usernames/?api-version=2018-06-30&DeviceClientType=x%2F1',
    `localhost:${hub.mqttPort}/usernames/?api-version=2021-04-12&model-id=dtmi:a:b;1`,
  ]) {
    const client = await connectDevice(hub, 'usernames', key, { username });
    await client.subscribeAsync('$iothub/twin/res/#', { qos: 0 });
    const answer = nextMessage(client, '$iothub/twin/res/200/');
    await client.publishAsync('$iothub/twin/GET/?$rid=7', ' ');
    assert.equal((await answer).topic, '$iothub/twin/res/200/?$rid=7', username);
    await client.endAsync();
  }
});

test("a device can neither subscribe to nor publish on another device's topics", async () => {
  const victimKey = await hub.createDevice('victim');
  const victim = await connectDevice(hub, 'victim', victimKey);
  await victim.subscribeAsync('devices/victim/messages/devicebound/#', { qos: 1 });
  const victimGot: string[] = [];
  victim.on('message', (topic) => victimGot.push(topic));
  const key = await hub.createDevice('intruder');
  const intruder = await connectDevice(hub, 'intruder', key);
  for (const filter of ['devices/victim/messages/devicebound/#', '#', 'devices/+/messages/events/#', '$iothub/twin/GET/#']) {
    // mqtt.js turns SUBACK 0x80 into an error.
    await assert.rejects(intruder.subscribeAsync(filter, { qos: 1 }), /Subscribe error/, filter);
  }
  const granted = await intruder.subscribeAsync('$iothub/twin/res/#', { qos: 0 });
  assert.deepEqual(
    granted.map((g) => g.qos),
    [0],
  );
  const closed = closedByHub(intruder);
  intruder.publish('devices/victim/messages/events/', 'spoofed', { qos: 1 });
  await closed;
  const { body } = await hub.rest('GET', '/messages/events?deviceId=victim');
  assert.deepEqual((body as { messages: unknown[] }).messages, []);
  // Twin answers reach only the device that asked.
  const intruder2 = await connectDevice(hub, 'intruder', key);
  await intruder2.subscribeAsync('$iothub/twin/res/#');
  await victim.subscribeAsync('$iothub/twin/res/#');
  const answer = nextMessage(intruder2, '$iothub/twin/res/');
  await intruder2.publishAsync('$iothub/twin/GET/?$rid=mine', '');
  await answer;
  assert.deepEqual(victimGot, []);
  await Promise.all([intruder2.endAsync(), victim.endAsync()]);
});

test('QoS 2 publishes and unknown topics close the connection; the hub keeps serving', async () => {
  const key = await hub.createDevice('qos2');
  const client = await connectDevice(hub, 'qos2', key);
  const closed = closedByHub(client);
  client.publish('devices/qos2/messages/events/', 'x', { qos: 2 });
  await closed;
  const again = await connectDevice(hub, 'qos2', key);
  const closedAgain = closedByHub(again);
  again.publish('$iothub/something/else', 'x', { qos: 0 });
  await closedAgain;
  const ok = await connectDevice(hub, 'qos2', key);
  await ok.publishAsync('devices/qos2/messages/events/', 'fine', { qos: 1 });
  await ok.endAsync();
});

test('telemetry over 256 KB closes the connection and is not logged; QoS 0 and 1 are accepted', async () => {
  const key = await hub.createDevice('big');
  const client = await connectDevice(hub, 'big', key);
  await client.publishAsync('devices/big/messages/events/%24.mid=q0', 'qos0', { qos: 0 });
  await client.publishAsync('devices/big/messages/events/$.mid=q1&flag', 'qos1', { qos: 1 });
  const closed = closedByHub(client);
  client.publish('devices/big/messages/events/', Buffer.alloc(256 * 1024 + 1, 'a'), { qos: 1 });
  await closed;
  const { body } = await hub.rest('GET', '/messages/events?deviceId=big');
  const messages = (body as { messages: { system: { messageId: string }; properties: Record<string, string>; body: string }[] }).messages;
  assert.deepEqual(
    messages.map((m) => m.system.messageId),
    ['q0', 'q1'],
  );
  assert.deepEqual(messages[1]!.properties, { flag: '' });
});

test('R-TWIN-6 R-TWIN-7 malformed, oversized and badly named patches get a 400 with errorCode; the twin is unchanged', async () => {
  const device = await twinDevice('limits');
  const first = await device.patch('ok', JSON.stringify({ keep: 'me' }));
  assert.equal(first.topic, '$iothub/twin/res/204/?$rid=ok&$version=2');
  const bad: Record<string, string | Buffer> = {
    'not JSON': '{"a":',
    'an array': '[1,2]',
    'a string': '"x"',
    'a dot in a name': JSON.stringify({ 'a.b': 1 }),
    'a dollar in a name': JSON.stringify({ $a: 1 }),
    'a space in a name': JSON.stringify({ 'a b': 1 }),
    'a control character in a name': JSON.stringify({ 'a\u0001': 1 }),
    'a long name': JSON.stringify({ ['k'.repeat(1025)]: 1 }),
    'a long string': JSON.stringify({ s: 'x'.repeat(4097) }),
    'a huge integer': '{"n": 9007199254740993}',
    'too deep': JSON.stringify({ a: { b: { c: { d: { e: { f: { g: { h: { i: { j: { k: 1 } } } } } } } } } } }),
    'over 32 KB': JSON.stringify(Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`p${i}`, 'x'.repeat(4000)]))),
    'broken UTF-8': Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
  };
  for (const [name, body] of Object.entries(bad)) {
    const answer = await device.patch(`bad-${name.replace(/\W/g, '')}`, body);
    assert.match(answer.topic, /^\$iothub\/twin\/res\/400\/\?\$rid=bad-/, name);
    assert.equal(answer.body?.errorCode, 400004, name);
    assert.ok(answer.body?.message, name);
  }
  assert.deepEqual(await reportedOf('limits'), { keep: 'me', $metadata: (await reportedOf('limits')).$metadata, $version: 2 });
  // The connection survived every refusal.
  const last = await device.patch('last', JSON.stringify({ keep: null }));
  assert.equal(last.topic, '$iothub/twin/res/204/?$rid=last&$version=3');
  await device.client.endAsync();
});

test('a second connection with the same device id replaces the first', async () => {
  const key = await hub.createDevice('twice');
  const first = await connectDevice(hub, 'twice', key);
  const firstClosed = closedByHub(first);
  const second = await connectDevice(hub, 'twice', key);
  await firstClosed;
  await second.subscribeAsync('$iothub/twin/res/#');
  const answer = nextMessage(second, '$iothub/twin/res/200/');
  await second.publishAsync('$iothub/twin/GET/?$rid=1', '');
  await answer;
  await second.endAsync();
  await eventually(
    async () => ((await hub.rest('GET', '/devices/twice')).body as { connectionState: string }).connectionState === 'Disconnected' || undefined,
    10_000,
    "device 'twice' shown Disconnected",
  );
});

test('R-TWIN-5 a clean=false session keeps its C2D subscription: messages sent while away arrive without subscribing again', async () => {
  const key = await hub.createDevice('sticky');
  const first = await connectDevice(hub, 'sticky', key, { clean: false });
  await first.subscribeAsync('devices/sticky/messages/devicebound/#', { qos: 1 });
  await first.endAsync();
  await hub.rest('POST', '/devices/sticky/messages/devicebound', { body: 'while away', properties: { n: '1' } });
  let arrived!: Promise<{ topic: string; payload: Buffer }>;
  const client = await connectDevice(hub, 'sticky', key, {
    clean: false,
    beforeConnect: (c) => {
      arrived = nextMessage(c, 'devices/sticky/messages/devicebound/');
    },
  });
  const { topic, payload } = await arrived;
  assert.equal(payload.toString(), 'while away');
  assert.match(topic, /^devices\/sticky\/messages\/devicebound\/%24\.mid=[^&]+&%24\.to=%2Fdevices%2Fsticky%2Fmessages%2Fdevicebound&%24\.exp=[^&]+&n=1$/);
  await client.endAsync();
});

test('re-keying or deleting a device closes its open connection; the old key no longer connects', async () => {
  const key = await hub.createDevice('revoked');
  const client = await connectDevice(hub, 'revoked', key);
  const closed = closedByHub(client);
  assert.equal((await hub.rest('POST', '/devices/revoked/regenerateKey', { key: 'both' })).status, 200);
  await closed;
  await assert.rejects(connectDevice(hub, 'revoked', key), { code: 5 });
  const fresh = ((await hub.rest('GET', '/devices/revoked')).body as { authentication: { symmetricKey: { primaryKey: string } } }).authentication.symmetricKey
    .primaryKey;
  const again = await connectDevice(hub, 'revoked', fresh);
  const closedAgain = closedByHub(again);
  assert.equal((await hub.rest('DELETE', '/devices/revoked')).status, 204);
  await closedAgain;
  await assert.rejects(connectDevice(hub, 'revoked', fresh), { code: 5 });
});
