/**
 * File upload into offcloud's own blob storage, with the unmodified SDKs: the
 * device SDK's `uploadToBlob` (the upload_to_blob sample) and
 * `getBlobSharedAccessSignature` + the storage SDK + `notifyBlobUploadStatus`
 * (the upload_to_blob_advanced sample), the service SDK's file notification
 * receiver, and the storage read back with its own SDK and Shared Key.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import deviceSdk from 'azure-iot-device';
import mqttTransport from 'azure-iot-device-mqtt';
import serviceSdk from 'azure-iothub';
import { AnonymousCredential, BlobServiceClient, BlockBlobClient, newPipeline } from '@azure/storage-blob';
import { startStorage } from '../../src/storage/server.ts';
import { createSasToken } from '../../src/hub/domain/sas.ts';
import { startHub } from '../../src/hub/server.ts';
import type { FileNotification } from '../../src/hub/domain/file-upload.ts';
import { quiet, tempDataDir } from '../helpers/index.ts';
import { eventually, routeServiceSdkTo, startTestHub, type TestHub } from './helpers.ts';

const { Client } = deviceSdk;
type DeviceMessage = InstanceType<typeof deviceSdk.Message>;

// The service clients close before the hub and the storage do (`after` hooks run in the order they were added).
const clients: { close(): Promise<unknown> }[] = [];
after(async () => {
  for (const client of clients) await client.close();
});
// Storage and hub share one data dir, so one CA: as under `offcloud up`.
const dataDir = await tempDataDir({ after });
const storage = await startStorage({ ...quiet, dataDir, httpsPort: 0 });
after(() => storage.close());
const storageFacts = storage.facts!.storage!;
const hub: TestHub = await startTestHub({ after }, { dataDir, fileUploadConnectionString: storageFacts.connectionString, fileUploadContainer: 'uploads' });
after(routeServiceSdkTo(hub));
const blobs = BlobServiceClient.fromConnectionString(storageFacts.connectionString).getContainerClient('uploads');

type Notification = FileNotification;

/** The service SDK's file notification receiver; `settle` decides what becomes of each notification (complete by default). */
async function fileNotifications(settle: (n: Notification) => 'complete' | 'abandon') {
  const service = serviceSdk.Client.fromConnectionString(`HostName=localhost:${hub.amqpPort};SharedAccessKeyName=iothubowner;SharedAccessKey=${hub.ownerKey}`);
  await service.open();
  clients.push(service);
  const { result: receiver } = await service.getFileNotificationReceiver();
  const seen: Notification[] = [];
  receiver.on('message', (message: DeviceMessage) => {
    const notification = JSON.parse(message.getData().toString()) as Notification;
    seen.push(notification);
    void (settle(notification) === 'complete' ? receiver.complete(message, () => undefined) : receiver.abandon(message, () => undefined));
  });
  return {
    seen,
    next: (count: number, deviceId: string) =>
      eventually(async () => seen.filter((n) => n.deviceId === deviceId)[count - 1], 10_000, `file notification ${count} of ${deviceId}`),
  };
}

/** A device client as the samples make it: the device's connection string and a transport, no options. */
async function sampleDevice(id: string) {
  const key = await hub.createDevice(id);
  return { key, client: Client.fromConnectionString(`HostName=localhost;DeviceId=${id};SharedAccessKey=${key}`, mqttTransport.Mqtt) };
}

/** Devices whose first file notification the service abandons. */
const abandonFirstOf = new Set<string>();
const notifications = await fileNotifications((n) => (abandonFirstOf.delete(n.deviceId) ? 'abandon' : 'complete'));

test('file upload: uploadToBlob (the upload_to_blob sample) puts the file into the configured container; the service gets a file notification', async () => {
  const { client } = await sampleDevice('uploader');
  const content = Buffer.from('line one\nline two\n'.repeat(1000));
  await client.uploadToBlob('testblob.txt', Readable.from([content]), content.length);

  const stored = await blobs.getBlobClient('uploader/testblob.txt').downloadToBuffer();
  assert.deepEqual(stored, content, 'the blob holds the file, under the device id');
  const notification = await notifications.next(1, 'uploader');
  assert.equal(notification.blobName, 'uploader/testblob.txt');
  assert.equal(notification.blobSizeInBytes, content.length);
  assert.equal(notification.blobUri, `${storageFacts.blobEndpoint}/uploads/uploader/testblob.txt`);
  assert.ok(Date.parse(notification.lastUpdatedTime) > 0 && Date.parse(notification.enqueuedTimeUtc) > 0);
});

test('file upload: getBlobSharedAccessSignature, the storage SDK, notifyBlobUploadStatus (the upload_to_blob_advanced sample)', async () => {
  const { client } = await sampleDevice('advanced');
  const blobInfo = await client.getBlobSharedAccessSignature('images/photo 1.jpg');
  assert.equal(blobInfo.blobName, 'advanced/images/photo 1.jpg');
  assert.equal(blobInfo.containerName, 'uploads');
  const pipeline = newPipeline(new AnonymousCredential(), { retryOptions: { maxTries: 1 } });
  const url = `https://${blobInfo.hostName}/${blobInfo.containerName}/${blobInfo.blobName}${blobInfo.sasToken}`;
  const upload = await new BlockBlobClient(url, pipeline).uploadData(Buffer.from('jpeg bytes'));
  await client.notifyBlobUploadStatus(blobInfo.correlationId, true, upload._response.status, '');
  const notification = await notifications.next(1, 'advanced');
  assert.equal(notification.blobName, 'advanced/images/photo 1.jpg');
  assert.equal(notification.blobSizeInBytes, 10);

  // The SAS names that one blob: another in the container, or the container's listing, is refused by storage.
  const sas = blobInfo.sasToken;
  const elsewhere = new BlockBlobClient(`https://${blobInfo.hostName}/uploads/other-device/x.txt${sas}`, pipeline);
  await assert.rejects(elsewhere.uploadData(Buffer.from('x')), (err: { statusCode?: number }) => err.statusCode === 403);
  assert.equal(await blobs.getBlobClient('other-device/x.txt').exists(), false);

  // A failed upload is told to the hub and ends the upload, but is no notification (as on the real hub).
  const failed = await client.getBlobSharedAccessSignature('failed.bin');
  await client.notifyBlobUploadStatus(failed.correlationId, false, 500, 'disk error');
  const second = await client.getBlobSharedAccessSignature('second.bin');
  await new BlockBlobClient(`https://${second.hostName}/${second.containerName}/${second.blobName}${second.sasToken}`, pipeline).uploadData(Buffer.from('2'));
  await client.notifyBlobUploadStatus(second.correlationId, true, 201, '');
  assert.equal((await notifications.next(2, 'advanced')).blobName, 'advanced/second.bin', 'the failed upload sent nothing');
});

test('file upload: a notification the service abandons comes again; one completed does not', async () => {
  abandonFirstOf.add('abandoned');
  const { client } = await sampleDevice('abandoned');
  await client.uploadToBlob('a.txt', Readable.from([Buffer.from('a')]), 1);
  await notifications.next(2, 'abandoned');
  await client.uploadToBlob('b.txt', Readable.from([Buffer.from('b')]), 1);
  await notifications.next(3, 'abandoned');
  assert.deepEqual(
    notifications.seen.filter((n) => n.deviceId === 'abandoned').map((n) => n.blobName),
    ['abandoned/a.txt', 'abandoned/a.txt', 'abandoned/b.txt'],
  );
});

test('file upload: bad requests get the hub error shape, the hub keeps serving and nothing stored is lost', async () => {
  const { key } = await sampleDevice('fuzzed');
  const token = createSasToken('localhost/devices/fuzzed', key, Math.floor(Date.now() / 1000) + 600);
  const device = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    hub.rest(method, path, body, { authorization: token, ...headers });
  const errorCode = (answer: { body: unknown }) => /^ErrorCode:(\w+);/.exec((answer.body as { Message?: string }).Message ?? '')?.[1];

  const ok = await device('POST', '/devices/fuzzed/files', { blobName: 'keep.txt' });
  assert.equal(ok.status, 200);
  const grant = ok.body as { correlationId: string; hostName: string; containerName: string; blobName: string; sasToken: string };
  await new BlockBlobClient(
    `https://${grant.hostName}/${grant.containerName}/${grant.blobName}${grant.sasToken}`,
    newPipeline(new AnonymousCredential()),
  ).uploadData(Buffer.from('kept'));

  for (const body of [
    {},
    { blobName: 42 },
    { blobName: '' },
    { blobName: ['a'] },
    { blobName: null },
    [],
    'text',
    { blobName: '../other/x.txt' },
    { blobName: 'a/../../x' },
    { blobName: 'a//b' },
    { blobName: '/lead' },
    { blobName: 'trail/' },
    { blobName: './x' },
    { blobName: 'q?sig=x' },
    { blobName: 'h#x' },
    { blobName: '%2e%2e/x' },
    { blobName: 'back\\slash' },
    { blobName: 'nul\u0000' },
    { blobName: 'x'.repeat(1020) },
  ]) {
    const answer = await device('POST', '/devices/fuzzed/files', body);
    assert.equal(answer.status, 400, JSON.stringify(body).slice(0, 80));
    assert.equal(errorCode(answer), 'ArgumentInvalid');
  }
  assert.equal((await device('POST', '/devices/fuzzed/files', '{"blobName": "x', { 'content-type': 'application/json' })).status, 400);
  assert.equal((await device('POST', '/devices/fuzzed/files', JSON.stringify({ blobName: 'x'.repeat(600_000) }))).status, 413);
  assert.equal((await device('POST', '/devices/fuzzed/files', 'blobName=x', { 'content-type': 'application/x-www-form-urlencoded' })).status, 415);

  const notify = (path: string, body: unknown) => device('POST', path, body);
  for (const [path, body] of [
    ['/devices/fuzzed/files/notifications', { isSuccess: true }],
    ['/devices/fuzzed/files/notifications', { correlationId: 'not-a-token', isSuccess: true }],
    ['/devices/fuzzed/files/notifications/not.a.token', { isSuccess: true }],
    ['/devices/fuzzed/files/notifications', { correlationId: `${grant.correlationId.slice(0, -2)}xx`, isSuccess: true }],
    ['/devices/fuzzed/files/notifications', { correlationId: grant.correlationId, isSuccess: 'yes' }],
    ['/devices/fuzzed/files/notifications', { correlationId: grant.correlationId, isSuccess: true, statusCode: 'x' }],
    ['/devices/fuzzed/files/notifications', { correlationId: grant.correlationId, isSuccess: true, statusDescription: 7 }],
    ['/devices/fuzzed/files/notifications', [grant.correlationId]],
  ] as const) {
    const answer = await notify(path, body);
    assert.equal(answer.status, 400, `${path} ${JSON.stringify(body).slice(0, 60)}`);
    assert.match(errorCode(answer) ?? '', /^(ArgumentInvalid|IotHubFormatError)$/);
  }

  // Another device may not complete (or even ask for) this device's upload.
  const otherKey = await hub.createDevice('fuzzed-other');
  const otherToken = createSasToken('localhost/devices/fuzzed-other', otherKey, Math.floor(Date.now() / 1000) + 600);
  const stolen = await hub.rest(
    'POST',
    '/devices/fuzzed-other/files/notifications',
    { correlationId: grant.correlationId, isSuccess: true },
    { authorization: otherToken },
  );
  assert.equal(stolen.status, 400);
  assert.equal(errorCode(stolen), 'IotHubFormatError');
  assert.equal((await hub.rest('POST', '/devices/fuzzed/files', { blobName: 'x' }, { authorization: otherToken })).status, 401);
  assert.equal((await hub.rest('POST', '/devices/fuzzed/files', { blobName: 'x' }, { authorization: '' })).status, 401);

  // At most 10 uploads open per device (keep.txt is one): the 11th is refused until one ends.
  const opened = [];
  for (let i = 0; i < 9; i++) opened.push((await device('POST', '/devices/fuzzed/files', { blobName: `n${i}` })).body as { correlationId: string });
  const tooMany = await device('POST', '/devices/fuzzed/files', { blobName: 'eleventh' });
  assert.equal(tooMany.status, 403);
  assert.equal(errorCode(tooMany), 'DeviceMaximumActiveFileUploadLimitExceeded');
  assert.equal((await notify('/devices/fuzzed/files/notifications', { correlationId: opened[0]!.correlationId, isSuccess: false })).status, 204);
  assert.equal((await device('POST', '/devices/fuzzed/files', { blobName: 'eleventh' })).status, 200);

  // Still serving, and the first upload completes with its notification and blob intact.
  assert.equal(
    (await notify(`/devices/fuzzed/files/notifications/${encodeURIComponent(grant.correlationId)}`, { isSuccess: true, statusCode: 201 })).status,
    204,
  );
  assert.equal((await notifications.next(1, 'fuzzed')).blobName, 'fuzzed/keep.txt');
  assert.equal((await blobs.getBlobClient('fuzzed/keep.txt').downloadToBuffer()).toString(), 'kept');
});

test('file upload: a hub without storage says so; one without notifications still takes uploads; bad settings stop start-up in one line', async (t) => {
  const plain = await startTestHub(t);
  const key = await plain.createDevice('lonely');
  const token = createSasToken('localhost/devices/lonely', key, Math.floor(Date.now() / 1000) + 600);
  const refused = await plain.rest('POST', '/devices/lonely/files', { blobName: 'x' }, { authorization: token });
  assert.equal(refused.status, 400);
  assert.match((refused.body as { Message: string }).Message, /file upload is not configured/);

  // Its own data dir, with the CA of the storage's (its certificate must be trusted).
  const quietDir = await tempDataDir(t);
  await cp(join(dataDir, 'ca'), join(quietDir, 'ca'), { recursive: true });
  const quietHub = await startTestHub(t, {
    dataDir: quietDir,
    fileUploadConnectionString: storageFacts.connectionString,
    fileUploadNotifications: false,
    fileUploadContainer: 'silent',
  });
  const quietKey = await quietHub.createDevice('quiet');
  const quietToken = createSasToken('localhost/devices/quiet', quietKey, Math.floor(Date.now() / 1000) + 600);
  const grant = (await quietHub.rest('POST', '/devices/quiet/files', { blobName: 'q.txt' }, { authorization: quietToken })).body as { correlationId: string };
  assert.equal(
    (await quietHub.rest('POST', '/devices/quiet/files/notifications', { correlationId: grant.correlationId, isSuccess: true }, { authorization: quietToken }))
      .status,
    204,
  );
  assert.equal(await BlobServiceClient.fromConnectionString(storageFacts.connectionString).getContainerClient('silent').exists(), true, 'made on demand');

  const badDir = await tempDataDir(t);
  await assert.rejects(startHub({ ...quiet, dataDir: badDir, fileUploadConnectionString: storageFacts.httpConnectionString }), /must be HTTPS/);
  await assert.rejects(
    startHub({ ...quiet, dataDir: badDir, fileUploadConnectionString: storageFacts.connectionString, fileUploadContainer: 'Bad_Name' }),
    /not a container name/,
  );
  await assert.rejects(startHub({ ...quiet, dataDir: badDir, fileUploadConnectionString: 'nonsense' }), /not a storage connection string/);
});
