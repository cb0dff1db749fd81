/**
 * What one client may cost the hub (docs/hub.md "Limits per client"), each
 * limit gone just over, and the attacks found in review (connections that
 * never finish the handshake or never send CONNECT, a 120 MB CONNECT, a twin
 * patch nested 10,000 deep), while a well-behaved device on the same hub keeps
 * being served.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import mqtt from 'mqtt';
import { closedByHub, connectDevice, nextEvent, nextMessage, startTestHub } from './helpers.ts';

// Short enough to wait for, long enough for a real device's handshake on a busy machine.
const CONNECT_TIMEOUT_MS = 2000;
const hub = await startTestHub({ after }, { connectTimeoutMs: CONNECT_TIMEOUT_MS });

/** A device that publishes telemetry and reads its twin, proving the hub still serves. */
async function wellBehavedDevice(deviceId: string) {
  const key = await hub.createDevice(deviceId);
  const client = await connectDevice(hub, deviceId, key);
  await client.subscribeAsync('$iothub/twin/res/#');
  let n = 0;
  return {
    client,
    async isServed(): Promise<void> {
      n++;
      await client.publishAsync(`devices/${deviceId}/messages/events/%24.mid=ok-${n}`, `{"n":${n}}`, { qos: 1 });
      const answer = nextMessage(client, '$iothub/twin/res/');
      await client.publishAsync(`$iothub/twin/GET/?$rid=${n}`, ' ');
      assert.match((await answer).topic, /^\$iothub\/twin\/res\/200\//);
    },
  };
}

function closed(socket: Socket): Promise<void> {
  socket.on('error', () => undefined);
  if (socket.closed) return Promise.resolve();
  return nextEvent<void>((listener) => socket.once('close', () => listener()), 10 * CONNECT_TIMEOUT_MS, 'connection close');
}

function tlsSocket(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: hub.mqttPort, ca: hub.ca, servername: 'localhost' }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Writes `total` bytes in 64 KB pieces, stopping when the hub closes the connection; the bytes it took. */
async function pour(socket: Socket, total: number): Promise<number> {
  const piece = Buffer.alloc(64 * 1024);
  let sent = 0;
  while (sent < total && !socket.destroyed) {
    if (!socket.write(piece))
      await Promise.race([nextEvent<void>((l) => socket.once('drain', () => l())), nextEvent<void>((l) => socket.once('close', () => l()))]);
    sent += piece.length;
  }
  return sent;
}

test('connections that never finish the TLS handshake or never send CONNECT are closed; a device keeps being served', async () => {
  const device = await wellBehavedDevice('patient');
  const silent = Array.from({ length: 20 }, () => tcpConnect({ host: '127.0.0.1', port: hub.mqttPort }));
  const halfHello = Array.from({ length: 5 }, () =>
    tcpConnect({ host: '127.0.0.1', port: hub.mqttPort }, function (this: Socket) {
      this.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
    }),
  );
  // Half-closed at once: the hub must not wait for the other half (CLOSE-WAIT for ever).
  const finOnly = Array.from({ length: 5 }, () =>
    tcpConnect({ host: '127.0.0.1', port: hub.mqttPort, allowHalfOpen: true }, function (this: Socket) {
      this.end();
    }),
  );
  const noConnect = await Promise.all(Array.from({ length: 5 }, () => tlsSocket()));
  const allClosed = Promise.all([...silent, ...halfHello, ...finOnly, ...noConnect].map(closed));
  await device.isServed();
  await allClosed;
  await device.isServed();
  await device.client.endAsync();
});

test('a CONNECT announcing 120 MB is cut off before its body is buffered; one just over 16 KB too, one under is read', async () => {
  const device = await wellBehavedDevice('bystander');
  const attacks = await Promise.all(Array.from({ length: 4 }, () => tlsSocket()));
  const sent = await Promise.all(
    attacks.map(async (socket) => {
      const gone = closed(socket);
      // CONNECT, remaining length 120 MB (variable-length encoding, MQTT 3.1.1 §2.2.3).
      socket.write(Buffer.from([0x10, 0x80, 0x80, 0x80, 0x3c]));
      const bytes = await pour(socket, 8 * 1024 * 1024);
      await gone;
      return bytes;
    }),
  );
  for (const bytes of sent) assert.ok(bytes < 8 * 1024 * 1024, `the hub closed the connection before 8 MB of the 120 MB (${bytes} bytes sent)`);
  await device.isServed();

  const withPassword = (password: string) =>
    mqtt.connect(`mqtts://localhost:${hub.mqttPort}`, {
      protocolVersion: 4,
      clientId: 'bystander',
      username: 'localhost/bystander/?api-version=2021-04-12',
      password,
      ca: hub.ca,
      reconnectPeriod: 0,
    });
  const under = withPassword('x'.repeat(15 * 1024));
  const refused = await nextEvent<Error & { code?: number }>((l) => under.once('error', l), 10_000, 'CONNACK');
  assert.equal(refused.code, 5, 'a 15 KB CONNECT is read, and refused for its password');
  under.end(true);
  const over = withPassword('x'.repeat(16 * 1024));
  let connack = false;
  over.on('error', () => (connack = true));
  await closedByHub(over, 10_000);
  assert.equal(connack, false, 'a CONNECT over 16 KB gets no CONNACK');
  over.end(true);
  await device.isServed();
  await device.client.endAsync();
});

test('after CONNECT a packet of 256 KB + 4 bytes (a 256 KB message) is taken, one byte more closes the connection', async () => {
  const device = await wellBehavedDevice('steady');
  const key = await hub.createDevice('heavy');
  const client = await connectDevice(hub, 'heavy', key);
  const topic = 'devices/heavy/messages/events/';
  // A QoS 1 PUBLISH carries 2 bytes of topic length, the topic, 2 bytes of packet id and the payload.
  await client.publishAsync(topic, Buffer.alloc(256 * 1024 - topic.length, 'a'), { qos: 1 });
  const gone = closedByHub(client);
  client.publish(topic, Buffer.alloc(256 * 1024 - topic.length + 1, 'a'), { qos: 1 });
  await gone;
  client.end(true);
  await device.isServed();
  await device.client.endAsync();
});

test('twin patches nested 10,000 deep get the 400 over MQTT and REST, objects and arrays alike; nothing changes', async () => {
  const device = await wellBehavedDevice('deep');
  const nest = (open: string, close: string, inner: string) => `${open.repeat(10_000)}${inner}${close.repeat(10_000)}`;
  const patches = { objects: `{"a":${nest('{"a":', '}', '1')}}`, arrays: `{"a":${nest('[', ']', '1')}}` };
  for (const [what, body] of Object.entries(patches)) {
    const answer = nextMessage(device.client, '$iothub/twin/res/');
    await device.client.publishAsync('$iothub/twin/PATCH/properties/reported/?$rid=deep', body);
    const { topic, payload } = await answer;
    assert.match(topic, /^\$iothub\/twin\/res\/400\/\?\$rid=deep$/, `MQTT ${what}`);
    assert.equal((JSON.parse(payload.toString()) as { errorCode: number }).errorCode, 400004, `MQTT ${what}`);
    const rest = await hub.rest('PATCH', '/twins/deep', `{"properties":{"desired":${body}}}`);
    assert.equal(rest.status, 400, `REST ${what}`);
    assert.match((rest.body as { Message: string }).Message, /^ErrorCode:ArgumentInvalid;/, `REST ${what}`);
  }
  const twin = (await hub.rest('GET', '/twins/deep')).body as { version: number };
  assert.equal(twin.version, 1, 'no refused patch was stored');
  await device.isServed();
  await device.client.endAsync();
});

test('a REST body just over 512 KB gets 413 in the service error shape; the device keeps being served', async () => {
  const device = await wellBehavedDevice('rest-neighbour');
  const body = JSON.stringify({ body: 'x'.repeat(512 * 1024 - 10) });
  assert.equal(Buffer.byteLength(body), 512 * 1024 + 1);
  const answer = await hub.rest('POST', '/devices/rest-neighbour/messages/devicebound', body);
  assert.equal(answer.status, 413);
  assert.match((answer.body as { Message: string }).Message, /^ErrorCode:MessageTooLarge;/);
  await device.isServed();
  await device.client.endAsync();
});

test('a device that publishes 300 QoS 1 messages without waiting for PUBACKs gets every PUBACK, and every message is recorded in order', async () => {
  // Read ahead is bounded (32 unhandled packets, then the socket waits): a burst crosses that bound many times.
  const key = await hub.createDevice('burst');
  const client = await connectDevice(hub, 'burst', key);
  const count = 300;
  await Promise.all(Array.from({ length: count }, (_, i) => client.publishAsync(`devices/burst/messages/events/n=${i}`, `{"i":${i}}`, { qos: 1 })));
  const { body } = await hub.rest('GET', '/messages/events?deviceId=burst');
  const messages = (body as { messages: { properties: { n: string }; body: string }[] }).messages;
  assert.deepEqual(
    messages.map((m) => Number(m.properties.n)),
    Array.from({ length: count }, (_, i) => i),
  );
  assert.equal(messages[count - 1]!.body, `{"i":${count - 1}}`);
  await client.endAsync();
});
