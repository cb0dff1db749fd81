/**
 * MQTT over WebSockets: the vendor SDK's `MqttWs` transport,
 * unmodified, patches reported properties, receives a C2D message and answers
 * a direct method over `wss://…/$iothub/websocket` with subprotocol `mqtt`.
 * MqttWs always dials port 443; a hub on another port is reached with the
 * SDK's own `mqtt.webSocketAgent` option (docs/hub.md).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import deviceSdk from 'azure-iot-device';
import mqttTransport from 'azure-iot-device-mqtt';
import { request } from 'undici';
import WebSocket from 'ws';
import { eventually, freePort, nextEvent, PortAgent, restClient, startTestHub } from './helpers.ts';

const { Client } = deviceSdk;
const hub = await startTestHub({ after });

test('R-TWIN-6 R-TWIN-5 MqttWs: the SDK over WebSockets patches reported properties, receives C2D and answers a method', async (t) => {
  const key = await hub.createDevice('ws-device');
  assert.equal((await hub.rest('POST', '/devices/ws-device/messages/devicebound', { body: 'over websockets', messageId: 'ws-c2d' })).status, 201);
  // MqttWs builds wss://<HostName>:443/$iothub/websocket, so HostName carries no port here.
  const client = Client.fromConnectionString(`HostName=localhost;DeviceId=ws-device;SharedAccessKey=${key}`, mqttTransport.MqttWs);
  await client.setOptions({ ca: hub.ca, mqtt: { webSocketAgent: new PortAgent(hub.webSocketPort) } } as Parameters<typeof client.setOptions>[0]);
  const received = nextEvent<{ messageId: string; data: Buffer }>(
    (listener) =>
      client.on('message', (message) => {
        listener({ messageId: String(message.messageId), data: message.data as Buffer });
        void client.complete(message);
      }),
    15_000,
    'C2D message',
  );
  client.onDeviceMethod('ping', (methodRequest, response) => {
    void response.send(200, { pong: methodRequest.payload });
  });
  await client.open();
  t.after(() => client.close());

  const message = await received;
  assert.equal(message.messageId, 'ws-c2d');
  assert.equal(message.data.toString(), 'over websockets');
  await eventually(
    async () =>
      ((await hub.rest('GET', '/devices/ws-device')).body as { cloudToDeviceMessageCount: number }).cloudToDeviceMessageCount === 0 ? true : undefined,
    10_000,
    'C2D completed',
  );

  const twin = await client.getTwin();
  await new Promise<void>((resolve, reject) =>
    twin.properties.reported.update({ transport: 'websockets', nested: { ok: true } }, (err?: Error) => (err ? reject(err) : resolve())),
  );
  const reported = ((await hub.rest('GET', '/twins/ws-device')).body as { properties: { reported: Record<string, unknown> } }).properties.reported;
  assert.equal(reported.transport, 'websockets');
  assert.deepEqual(reported.nested, { ok: true });
  assert.equal(reported.$version, 2);

  const invoked = await hub.rest('POST', '/twins/ws-device/methods', { methodName: 'ping', responseTimeoutInSeconds: 10, payload: 7 });
  assert.deepEqual(invoked.body, { status: 200, payload: { pong: 7 } });
});

test('the WebSocket port refuses other paths, other subprotocols and plain requests; it keeps serving', async () => {
  const url = `wss://localhost:${hub.webSocketPort}`;
  const refusedUpgrade = async (path: string, protocols: string[]) => {
    const socket = new WebSocket(`${url}${path}`, protocols, { ca: hub.ca });
    const outcome = await nextEvent<string>((listener) => {
      socket.once('open', () => listener('open'));
      socket.once('unexpected-response', (_req, response) => listener(`status ${response.statusCode}`));
      socket.once('error', (err) => listener(`error ${err.message}`));
    });
    socket.terminate();
    return outcome;
  };
  assert.notEqual(await refusedUpgrade('/elsewhere', ['mqtt']), 'open', 'another path');
  assert.notEqual(await refusedUpgrade('/$iothub/websocket', ['chat']), 'open', 'another subprotocol');
  const plain = await restClient(`https://localhost:${hub.webSocketPort}`, hub.ca, () => '');
  const answer = await request(`https://localhost:${hub.webSocketPort}/$iothub/websocket`, { dispatcher: plain.agent });
  assert.equal(answer.statusCode, 426);
  await answer.body.dump();
  await plain.agent.close();
  // Still serving the right path and subprotocol.
  const socket = new WebSocket(`${url}/$iothub/websocket`, ['mqtt'], { ca: hub.ca });
  await nextEvent<void>((listener) => socket.once('open', () => listener()));
  socket.terminate();
});

test('one HTTPS listener: the REST API and MQTT over WebSockets share a port, as on the real hub', async () => {
  assert.equal(hub.webSocketPort, Number(new URL(hub.restUrl).port));
  assert.equal((await hub.rest('GET', '/devices/')).status, 200);
});

test('--web-socket-port on another port keeps a WebSocket listener of its own', async (t) => {
  const separate = await startTestHub(t, { webSocketPort: await freePort() });
  assert.notEqual(separate.webSocketPort, Number(new URL(separate.restUrl).port));
  const socket = new WebSocket(`wss://localhost:${separate.webSocketPort}/$iothub/websocket`, ['mqtt'], { ca: separate.ca });
  await nextEvent<void>((listener) => socket.once('open', () => listener()));
  socket.terminate();
  const plain = await restClient(`https://localhost:${separate.webSocketPort}`, separate.ca, () => '');
  assert.equal((await plain.call('GET', '/devices')).status, 404);
  await plain.agent.close();
});
