/**
 * The device SDK's HTTP transport (azure-iot-device-http), unmodified:
 * telemetry one at a time and in batches, C2D received by polling and
 * completed, rejected or abandoned by lock token, on the hub's one HTTPS
 * listener. The transport always dials 443; its own `http.agent` option
 * reaches a hub on another port.
 */
import { after, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import deviceSdk from 'azure-iot-device';
import httpTransport from 'azure-iot-device-http';
import { createSasToken } from '../../src/hub/domain/sas.ts';
import { eventually, nextEvent, PortAgent, startTestHub, type TestHub } from './helpers.ts';

const { Client, Message } = deviceSdk;
type DeviceClient = InstanceType<typeof Client>;
type DeviceMessage = InstanceType<typeof Message>;

const hub: TestHub = await startTestHub({ after });
const restPort = Number(new URL(hub.restUrl).port);

async function openDevice(t: TestContext, id: string): Promise<{ client: DeviceClient; key: string }> {
  const key = await hub.createDevice(id);
  const client = Client.fromConnectionString(`HostName=localhost;DeviceId=${id};SharedAccessKey=${key}`, httpTransport.Http);
  const agent = new PortAgent(restPort, { keepAlive: true });
  await client.setOptions({ ca: hub.ca, http: { agent, receivePolicy: { interval: 1 } } } as Parameters<DeviceClient['setOptions']>[0]);
  await client.open();
  t.after(async () => {
    await client.close();
    agent.destroy();
  });
  return { client, key };
}

interface Telemetry {
  system: Record<string, string>;
  properties: Record<string, string>;
  body: string;
}

function telemetryOf(deviceId: string, count: number): Promise<Telemetry[]> {
  return eventually(
    async () => {
      const { body } = await hub.rest('GET', `/messages/events?deviceId=${deviceId}`);
      const messages = (body as { messages: Telemetry[] }).messages;
      return messages.length >= count ? messages : undefined;
    },
    10_000,
    `${count} telemetry messages from ${deviceId}`,
  );
}

test('R-TWIN-4 Http: sendEvent with system and application properties, and sendEventBatch', async (t) => {
  const { client } = await openDevice(t, 'http-telemetry');
  const message = new Message(JSON.stringify({ temperature: 20 }));
  message.messageId = 'http-1';
  message.correlationId = 'corr-1';
  message.contentType = 'application/json';
  message.contentEncoding = 'utf-8';
  message.properties.add('alert', 'high');
  const sent = await client.sendEvent(message);
  assert.equal(sent.constructor.name, 'MessageEnqueued');
  const batch = [new Message('one'), new Message(Buffer.from([0, 1, 2, 255]))];
  batch[0]!.properties.add('index', '0');
  await client.sendEventBatch(batch);
  const [single, first, second] = await telemetryOf('http-telemetry', 3);
  assert.deepEqual(single!.system, { messageId: 'http-1', correlationId: 'corr-1', contentType: 'application/json', contentEncoding: 'utf-8' });
  assert.deepEqual(single!.properties, { alert: 'high' });
  assert.deepEqual(JSON.parse(single!.body), { temperature: 20 });
  assert.equal(first!.body, 'one');
  assert.deepEqual(first!.properties, { index: '0' });
  assert.equal(Buffer.from(second!.body, 'base64').toString('hex'), '000102ff');
});

async function queueC2d(deviceId: string, body: string, extra: Record<string, unknown> = {}) {
  const sent = await hub.rest('POST', `/devices/${deviceId}/messages/devicebound`, { body, ...extra });
  assert.equal(sent.status, 201);
}

async function pending(deviceId: string): Promise<number> {
  return ((await hub.rest('GET', `/devices/${deviceId}`)).body as { cloudToDeviceMessageCount: number }).cloudToDeviceMessageCount;
}

test('R-TWIN-5 Http: C2D by polling, with its properties and lock token; complete removes it', async (t) => {
  await hub.createDevice('http-c2d');
  await queueC2d('http-c2d', 'polled', { messageId: 'c2d-1', correlationId: 'cid', ack: 'full', properties: { color: 'blue' } });
  const key = ((await hub.rest('GET', '/devices/http-c2d')).body as { authentication: { symmetricKey: { primaryKey: string } } }).authentication.symmetricKey
    .primaryKey;
  const client = Client.fromConnectionString(`HostName=localhost;DeviceId=http-c2d;SharedAccessKey=${key}`, httpTransport.Http);
  const agent = new PortAgent(restPort);
  await client.setOptions({ ca: hub.ca, http: { agent, receivePolicy: { interval: 1 } } } as Parameters<DeviceClient['setOptions']>[0]);
  t.after(async () => {
    await client.close();
    agent.destroy();
  });
  const received = nextEvent<DeviceMessage>((listener) => client.on('message', listener), 10_000, 'C2D message');
  await client.open();
  const message = await received;
  assert.equal(message.data.toString(), 'polled');
  assert.equal(message.messageId, 'c2d-1');
  assert.equal(message.correlationId, 'cid');
  assert.equal(message.to, '/devices/http-c2d/messages/devicebound');
  // The SDK's HTTP transport keeps the header's name (iothub-app-color) as the property's.
  assert.equal(message.properties.getValue('iothub-app-color'), 'blue');
  assert.match(String(message.lockToken), /^[0-9a-f-]{36}$/);
  await client.complete(message);
  assert.equal(await pending('http-c2d'), 0);
});

test('Http: abandon gives the message back (a new lock), reject removes it', async (t) => {
  const { client } = await openDevice(t, 'http-settle');
  const messages: DeviceMessage[] = [];
  const next = () => nextEvent<DeviceMessage>((listener) => client.once('message', listener), 10_000, 'C2D message');
  let arriving = next();
  await queueC2d('http-settle', 'again');
  messages.push(await arriving);
  arriving = next();
  await client.abandon(messages[0]!);
  messages.push(await arriving);
  assert.equal(messages[1]!.data.toString(), 'again');
  assert.notEqual(messages[1]!.lockToken, messages[0]!.lockToken);
  // The first lock is gone: settling with it is refused, and the message stays.
  await assert.rejects(client.complete(messages[0]!));
  assert.equal(await pending('http-settle'), 1);
  await client.reject(messages[1]!);
  assert.equal(await pending('http-settle'), 0);
});

test('Http: refused credentials, broken batches, lost locks and huge bodies answer in the error shape; nothing is lost', async () => {
  const key = await hub.createDevice('http-fuzz');
  const token = createSasToken('localhost/devices/http-fuzz', key, Math.floor(Date.now() / 1000) + 600);
  const call = (method: string, path: string, body?: string | Buffer, headers: Record<string, string> = {}) =>
    hub.rest(method, path, body, { authorization: token, ...headers });
  assert.equal((await call('POST', '/devices/http-fuzz/messages/events', 'x', { authorization: 'SharedAccessSignature sr=x&sig=y&se=1' })).status, 401);
  assert.equal((await call('POST', '/devices/other/messages/events', 'x')).status, 401, "another device's path");
  const otherToken = createSasToken('localhost/devices/http-fuzz', Buffer.alloc(32, 1).toString('base64'), Math.floor(Date.now() / 1000) + 600);
  assert.equal((await call('GET', '/devices/http-fuzz/messages/devicebound', undefined, { authorization: otherToken })).status, 401, 'wrong key');
  // A device token does not reach the service API.
  assert.equal((await call('GET', '/devices/http-fuzz')).status, 401);
  const batch = { 'content-type': 'application/vnd.microsoft.iothub.json' };
  for (const body of ['not json', '{"body":"x"}', '[{"body":5}]', '[{"body":"***"}]']) {
    const answer = await call('POST', '/devices/http-fuzz/messages/events', body, batch);
    assert.equal(answer.status, 400, body);
    assert.match((answer.body as { Message: string }).Message, /^ErrorCode:ArgumentInvalid;/);
  }
  const huge = await call('POST', '/devices/http-fuzz/messages/events', Buffer.alloc(300 * 1024, 65), { 'content-type': 'application/octet-stream' });
  assert.equal(huge.status, 413);
  const hugeBatch = JSON.stringify([{ body: Buffer.alloc(200 * 1024).toString('base64') }, { body: Buffer.alloc(100 * 1024).toString('base64') }]);
  assert.equal((await call('POST', '/devices/http-fuzz/messages/events', hugeBatch, batch)).status, 413);
  await queueC2d('http-fuzz', 'kept');
  assert.equal((await call('DELETE', '/devices/http-fuzz/messages/devicebound/not-a-lock')).status, 412);
  assert.equal((await call('POST', '/devices/http-fuzz/messages/devicebound/..%2F..%2Fx/abandon')).status, 412);
  assert.equal(await pending('http-fuzz'), 1);
  const received = await call('GET', '/devices/http-fuzz/messages/devicebound');
  assert.equal(received.status, 200);
  assert.equal(received.body, 'kept');
  assert.equal((await call('GET', '/devices/http-fuzz/messages/devicebound')).status, 204, 'locked by the first receive');
  const lockToken = String(received.headers.etag).replace(/"/g, '');
  assert.equal((await call('DELETE', `/devices/http-fuzz/messages/devicebound/${lockToken}`)).status, 204);
  assert.equal((await call('POST', '/devices/http-fuzz/messages/events', 'still serving')).status, 204);
});
