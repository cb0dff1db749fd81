/**
 * Delivery feedback for cloud-to-device messages that are never completed:
 * `Expired` (past their time to live) and `DeliveryCountExceeded` (handed to
 * the device the hub's max delivery count of times), received by the service
 * SDK's feedback receiver; the hub's clock is injected, nothing sleeps.
 * Records no receiver took are kept across a restart.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { cp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import deviceSdk from 'azure-iot-device';
import mqttTransport from 'azure-iot-device-mqtt';
import amqpTransport from 'azure-iot-device-amqp';
import serviceSdk from 'azure-iothub';
import { createSasToken } from '../../src/hub/domain/sas.ts';
import type { FeedbackRecord } from '../../src/hub/domain/service-queue.ts';
import { tempDataDir } from '../helpers/index.ts';
import { eventually, routeServiceSdkTo, startTestHub, type TestHub } from './helpers.ts';

const { Client } = deviceSdk;
type DeviceMessage = InstanceType<typeof deviceSdk.Message>;

// The clients close before the hub does (`after` hooks run in the order they were added).
const clients: { close(): Promise<unknown> }[] = [];
after(async () => {
  for (const client of clients) await client.close();
});
let clockOffset = 0;
const hub: TestHub = await startTestHub({ after }, { c2dMaxDeliveryCount: 2, clock: () => Date.now() + clockOffset });
after(routeServiceSdkTo(hub));

const service = serviceSdk.Client.fromConnectionString(`HostName=localhost:${hub.amqpPort};SharedAccessKeyName=iothubowner;SharedAccessKey=${hub.ownerKey}`);
await service.open();
clients.push(service);
const { result: feedbackReceiver } = await service.getFeedbackReceiver();
const records: FeedbackRecord[] = [];
feedbackReceiver.on('message', (message: DeviceMessage) => {
  records.push(...(JSON.parse(message.getData().toString()) as FeedbackRecord[]));
  void feedbackReceiver.complete(message, () => undefined);
});

const feedbackOf = (deviceId: string, count: number) =>
  eventually(
    async () => {
      const mine = records.filter((r) => r.deviceId === deviceId);
      return mine.length >= count ? mine.map((r) => [r.originalMessageId, r.statusCode, r.description]) : undefined;
    },
    10_000,
    `${count} feedback records of ${deviceId}`,
  );

const sendC2d = async (deviceId: string, messageId: string, ack: string, ttlSeconds = 3600) => {
  const sent = await hub.rest('POST', `/devices/${deviceId}/messages/devicebound`, { body: `body of ${messageId}`, messageId, ack, ttlSeconds });
  assert.equal(sent.status, 201);
};

test('C2D feedback: a message past its time to live is Expired (ack full or negative), never delivered; a live one is delivered', async () => {
  const key = await hub.createDevice('expiring');
  await sendC2d('expiring', 'm-expired', 'full', 60);
  await sendC2d('expiring', 'm-expired-quiet', 'positive', 60);
  await sendC2d('expiring', 'm-live', 'full');
  clockOffset += 120_000;
  assert.equal(((await hub.rest('GET', '/devices/expiring')).body as { cloudToDeviceMessageCount: number }).cloudToDeviceMessageCount, 1);

  const client = Client.fromConnectionString(hub.connectionString('expiring', key), mqttTransport.Mqtt);
  await client.setOptions({ ca: hub.ca });
  const received: DeviceMessage[] = [];
  client.on('message', (message: DeviceMessage) => {
    received.push(message);
    void client.complete(message, () => undefined);
  });
  await client.open();
  clients.push(client);
  assert.deepEqual(await feedbackOf('expiring', 2), [
    ['m-expired', 'Expired', 'Message expired'],
    ['m-live', 'Success', 'Success'],
  ]);
  assert.deepEqual(
    received.map((m) => m.messageId),
    ['m-live'],
  );
});

test('C2D feedback: a message that expires while its device is away is dead-lettered when the next one is queued', async () => {
  await hub.createDevice('away');
  await sendC2d('away', 'm-old', 'negative', 60);
  clockOffset += 120_000;
  await sendC2d('away', 'm-new', 'none');
  assert.deepEqual(await feedbackOf('away', 1), [['m-old', 'Expired', 'Message expired']]);
});

test('C2D feedback: abandoned max-delivery-count times over AMQP, a message is DeliveryCountExceeded and not delivered again', async () => {
  const key = await hub.createDevice('abandoner');
  const client = Client.fromConnectionString(`HostName=localhost:${hub.amqpPort};DeviceId=abandoner;SharedAccessKey=${key}`, amqpTransport.Amqp);
  await client.setOptions({ ca: hub.ca });
  const deliveries: string[] = [];
  client.on('message', (message: DeviceMessage) => {
    deliveries.push(message.messageId);
    void (message.messageId === 'm-ok' ? client.complete(message, () => undefined) : client.abandon(message, () => undefined));
  });
  await client.open();
  clients.push(client);
  await sendC2d('abandoner', 'm-abandoned', 'full');
  assert.deepEqual(await feedbackOf('abandoner', 1), [['m-abandoned', 'DeliveryCountExceeded', 'Message delivery count exceeded']]);
  await sendC2d('abandoner', 'm-ok', 'full');
  await feedbackOf('abandoner', 2);
  assert.deepEqual(deliveries, ['m-abandoned', 'm-abandoned', 'm-ok'], 'delivered twice (the max), then dead-lettered');
});

test('C2D feedback: over HTTP, each receive counts a delivery; the third receive of a twice-abandoned message finds nothing', async () => {
  const key = await hub.createDevice('poller');
  const token = createSasToken('localhost/devices/poller', key, Math.floor(Date.now() / 1000) + 600);
  const device = (method: string, path: string) => hub.rest(method, path, undefined, { authorization: token });
  await sendC2d('poller', 'm-polled', 'negative');
  for (let delivery = 1; delivery <= 2; delivery++) {
    const received = await device('GET', '/devices/poller/messages/devicebound');
    assert.equal(received.status, 200, `delivery ${delivery}`);
    const lockToken = String(received.headers.etag).replace(/"/g, '');
    assert.equal((await device('POST', `/devices/poller/messages/devicebound/${lockToken}/abandon`)).status, 204);
  }
  assert.equal((await device('GET', '/devices/poller/messages/devicebound')).status, 204);
  assert.deepEqual(await feedbackOf('poller', 1), [['m-polled', 'DeliveryCountExceeded', 'Message delivery count exceeded']]);
});

test('C2D feedback: records no receiver took are kept across a restart of the hub, until the service takes them', async (t) => {
  // The CA of the suite's hub, which the service SDK's connections trust here.
  const dataDir = await tempDataDir(t);
  await cp(join(hub.dataDir, 'ca'), join(dataDir, 'ca'), { recursive: true });
  const settleOne = async (restarted: TestHub, messageId: string) => {
    const key = await restarted.createDevice(`kept-${messageId}`);
    const token = createSasToken(`localhost/devices/kept-${messageId}`, key, Math.floor(Date.now() / 1000) + 600);
    const device = (method: string, path: string) => restarted.rest(method, path, undefined, { authorization: token });
    await restarted.rest('POST', `/devices/kept-${messageId}/messages/devicebound`, { body: 'x', messageId, ack: 'full' });
    const received = await device('GET', `/devices/kept-${messageId}/messages/devicebound`);
    assert.equal((await device('DELETE', `/devices/kept-${messageId}/messages/devicebound/${String(received.headers.etag).replace(/"/g, '')}`)).status, 204);
  };
  const firstFeedback = async (restarted: TestHub) => {
    const receiverClient = serviceSdk.Client.fromConnectionString(
      `HostName=localhost:${restarted.amqpPort};SharedAccessKeyName=iothubowner;SharedAccessKey=${restarted.ownerKey}`,
    );
    await receiverClient.open();
    const { result: receiver } = await receiverClient.getFeedbackReceiver();
    const got: FeedbackRecord[] = [];
    receiver.on('message', (message: DeviceMessage) => {
      got.push(...(JSON.parse(message.getData().toString()) as FeedbackRecord[]));
      void receiver.complete(message, () => undefined);
    });
    return { got, close: () => receiverClient.close() };
  };

  const first = await startTestHub(t, { dataDir });
  await settleOne(first, 'before-restart');
  await first.close();

  const second = await startTestHub(t, { dataDir });
  const taking = await firstFeedback(second);
  await eventually(async () => (taking.got.length ? true : undefined), 10_000, 'the kept record after the restart');
  assert.deepEqual(
    taking.got.map((r) => [r.originalMessageId, r.statusCode]),
    [['before-restart', 'Success']],
  );
  // Taken (accepted) by the receiver: dropped from the data dir's kept feedback once the disposition is in.
  await eventually(
    async () => ((JSON.parse(await readFile(join(dataDir, 'hub', 'feedback.json'), 'utf8')) as unknown[]).length === 0 ? true : undefined),
    10_000,
    'the taken record dropped from the store',
  );
  await taking.close();
  await second.close();

  const third = await startTestHub(t, { dataDir });
  const next = await firstFeedback(third);
  await settleOne(third, 'after-restart');
  await eventually(async () => (next.got.length ? true : undefined), 10_000, 'a new record');
  assert.deepEqual(
    next.got.map((r) => r.originalMessageId),
    ['after-restart'],
    'the record taken before the restart is not delivered again',
  );
  await next.close();
});
