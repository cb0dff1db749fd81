/**
 * AMQP 1.0: the device SDK's Amqp and AmqpWs transports and the
 * service SDK's Client, unmodified. Devices authenticate by put-token on
 * `$cbs`, send telemetry, receive and settle C2D messages, read and patch
 * their twin, get desired pushes and answer direct methods; the service sends
 * C2D messages and receives their delivery feedback.
 */
import { after, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import deviceSdk from 'azure-iot-device';
import amqpTransport from 'azure-iot-device-amqp';
import serviceSdk from 'azure-iothub';
import { eventually, nextEvent, PortAgent, routeServiceSdkTo, startTestHub, type TestHub } from './helpers.ts';

const { Client, Message } = deviceSdk;
type DeviceClient = InstanceType<typeof Client>;
type DeviceMessage = InstanceType<typeof Message>;
type Twin = Awaited<ReturnType<DeviceClient['getTwin']>>;

const hub: TestHub = await startTestHub({ after });
after(routeServiceSdkTo(hub));
const restPort = Number(new URL(hub.restUrl).port);

type Transport = 'Amqp' | 'AmqpWs';

async function openDevice(t: TestContext, id: string, transport: Transport, prepare?: (client: DeviceClient) => void): Promise<DeviceClient> {
  const key = await hub.createDevice(id);
  // Amqp dials amqps://<HostName>, a port included; AmqpWs dials wss://<HostName>:443, reached through its own agent option.
  const hostName = transport === 'Amqp' ? `localhost:${hub.amqpPort}` : 'localhost';
  const client = Client.fromConnectionString(`HostName=${hostName};DeviceId=${id};SharedAccessKey=${key}`, amqpTransport[transport]);
  await client.setOptions({ ca: hub.ca, ...(transport === 'AmqpWs' ? { amqp: { webSocketAgent: new PortAgent(restPort) } } : {}) } as Parameters<
    DeviceClient['setOptions']
  >[0]);
  prepare?.(client);
  await client.open();
  t.after(() => client.close());
  return client;
}

function updateReported(twin: Twin, patch: Record<string, unknown>): Promise<void> {
  return new Promise((resolve, reject) => twin.properties.reported.update(patch, (err?: Error) => (err ? reject(err) : resolve())));
}

for (const transport of ['Amqp', 'AmqpWs'] as const) {
  test(`R-TWIN-4 R-TWIN-6 R-TWIN-9 ${transport}: telemetry, twin read and reported patch, desired push, direct method`, async (t) => {
    const id = `amqp-${transport.toLowerCase()}`;
    const client = await openDevice(t, id, transport, (c) =>
      c.onDeviceMethod('reboot', (request, response) => {
        void response.send(200, { rebooting: true, echo: request.payload });
      }),
    );
    const message = new Message(JSON.stringify({ temperature: 22 }));
    message.messageId = `${id}-1`;
    message.contentType = 'application/json';
    message.properties.add('level', 'info');
    await client.sendEvent(message);
    const telemetry = await eventually(
      async () => {
        const { body } = await hub.rest('GET', `/messages/events?deviceId=${id}`);
        return (body as { messages: { system: Record<string, string>; properties: Record<string, string>; body: string }[] }).messages[0];
      },
      10_000,
      "the AMQP device's telemetry in the hub's events",
    );
    assert.equal(telemetry.system.messageId, `${id}-1`);
    assert.equal(telemetry.system.contentType, 'application/json');
    assert.deepEqual(telemetry.properties, { level: 'info' });
    assert.deepEqual(JSON.parse(telemetry.body), { temperature: 22 });

    const twin: Twin = await client.getTwin();
    assert.equal(twin.properties.reported.$version, 1);
    await updateReported(twin, { firmware: '2.0', nested: { a: 1 } });
    const reported = ((await hub.rest('GET', `/twins/${id}`)).body as { properties: { reported: Record<string, unknown> } }).properties.reported;
    assert.equal(reported.firmware, '2.0');
    assert.equal(reported.$version, 2);

    const pushed = nextEvent<Record<string, unknown>>((listener) =>
      twin.on('properties.desired', (patch: Record<string, unknown>) => {
        if (patch.interval !== undefined) listener(patch);
      }),
    );
    // The desired subscription (a PUT on the twin link) may still be on its way.
    await eventually(
      async () => {
        await hub.rest('PATCH', `/twins/${id}`, { properties: { desired: { interval: 5 } } }, { 'if-match': '*' });
        return Promise.race([pushed.then(() => true), new Promise<undefined>((resolve) => setTimeout(resolve, 200))]);
      },
      10_000,
      'the desired-property patch pushed to the AMQP device',
    );
    assert.equal((await pushed).interval, 5);

    const invoked = await eventually(
      async () => {
        const answer = await hub.rest('POST', `/twins/${id}/methods`, { methodName: 'reboot', responseTimeoutInSeconds: 5, payload: { delay: 1 } });
        return answer.status === 200 ? answer : undefined;
      },
      10_000,
      'the direct method answered by the AMQP device',
    );
    assert.deepEqual(invoked.body, { status: 200, payload: { rebooting: true, echo: { delay: 1 } } });
    assert.equal(((await hub.rest('GET', `/twins/${id}`)).body as { connectionState: string }).connectionState, 'Connected');
  });
}

test('R-TWIN-5 Amqp: the service Client sends C2D; the device completes, rejects and abandons; feedback reaches the service', async (t) => {
  const client = await openDevice(t, 'amqp-c2d', 'Amqp');
  const service = serviceSdk.Client.fromConnectionString(
    `HostName=localhost:${hub.amqpPort};SharedAccessKeyName=service;SharedAccessKey=${await policyKey('service')}`,
  );
  await service.open();
  t.after(() => service.close());
  const { result: feedback } = await service.getFeedbackReceiver();
  const records: { originalMessageId: string; statusCode: string; deviceId: string }[] = [];
  feedback.on('message', (msg: DeviceMessage) => {
    records.push(...(JSON.parse(msg.getData().toString()) as typeof records));
    void feedback.complete(msg, () => undefined);
  });

  const received: DeviceMessage[] = [];
  client.on('message', (msg: DeviceMessage) => received.push(msg));
  const send = async (id: string) => {
    const message = new Message(`body of ${id}`);
    message.messageId = id;
    message.ack = 'full';
    message.properties.add('kind', 'test');
    await service.send('amqp-c2d', message);
  };
  const arrived = async (count: number) =>
    eventually(async () => (received.length >= count ? received[count - 1] : undefined), 10_000, `C2D message ${count} at the AMQP device`);

  await send('m-complete');
  const first = await arrived(1);
  assert.equal(first.data.toString(), 'body of m-complete');
  assert.equal(first.messageId, 'm-complete');
  assert.equal(first.properties.getValue('kind'), 'test');
  await client.complete(first);
  await send('m-abandon');
  const second = await arrived(2);
  await client.abandon(second);
  const again = await arrived(3);
  assert.equal(again.messageId, 'm-abandon', 'an abandoned message comes again');
  await client.reject(again);
  await eventually(async () => (records.length >= 2 ? true : undefined), 10_000, 'two feedback records');
  assert.deepEqual(
    records.map((r) => [r.originalMessageId, r.statusCode, r.deviceId]),
    [
      ['m-complete', 'Success', 'amqp-c2d'],
      ['m-abandon', 'Rejected', 'amqp-c2d'],
    ],
  );
  assert.equal(((await hub.rest('GET', '/devices/amqp-c2d')).body as { cloudToDeviceMessageCount: number }).cloudToDeviceMessageCount, 0);
  await assert.rejects(service.send('amqp-nobody', new Message('x')), /DeviceNotFound|not found/i);
});

async function policyKey(name: string): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  const { join } = await import('node:path');
  const policies = JSON.parse(await readFile(join(hub.dataDir, 'hub', 'policies.json'), 'utf8')) as Record<string, { primaryKey: string }>;
  return policies[name]!.primaryKey;
}

test('AMQP refuses a wrong token at put-token (the SDK fails fast), and a registry-only policy cannot send C2D', async () => {
  await hub.createDevice('amqp-wrong');
  const client = Client.fromConnectionString(
    `HostName=localhost:${hub.amqpPort};DeviceId=amqp-wrong;SharedAccessKey=${Buffer.alloc(32, 7).toString('base64')}`,
    amqpTransport.Amqp,
  );
  await client.setOptions({ ca: hub.ca });
  await assert.rejects(client.open(), /Unauthorized|unauthorized/);
  await client.close();
  const registryOnly = serviceSdk.Client.fromConnectionString(
    `HostName=localhost:${hub.amqpPort};SharedAccessKeyName=registryRead;SharedAccessKey=${await policyKey('registryRead')}`,
  );
  // Refused at put-token: the SDK gives up at once (its message says only that it could not connect).
  await assert.rejects(registryOnly.open());
  await registryOnly.close().catch(() => undefined);
  // Still serving.
  assert.equal((await hub.rest('GET', '/devices/')).status, 200);
});

test('AMQP bad input: garbage bytes, links without a token, unknown nodes and broken put-tokens; the hub keeps serving', async (t) => {
  const tls = await import('node:tls');
  // Not AMQP at all.
  const garbage = tls.connect({ host: 'localhost', port: hub.amqpPort, ca: hub.ca });
  await nextEvent<void>((listener) => garbage.once('secureConnect', () => listener()));
  garbage.write(Buffer.from('GET / HTTP/1.1\r\n\r\n'.repeat(100)));
  await nextEvent<void>((listener) => garbage.once('close', () => listener()), 10_000, 'garbage connection closed');

  // A raw AMQP client (rhea) that puts no token, or a broken one, then tries device and service nodes.
  const rhea = (await import('rhea')).default;
  const container = rhea.create_container();
  const connection = container.connect({ host: 'localhost', port: hub.amqpPort, transport: 'tls', ca: hub.ca, reconnect: false } as never);
  t.after(() => connection.close());
  await nextEvent<void>((listener) => connection.once('connection_open', () => listener()));
  for (const address of ['/devices/someone/messages/events', '/messages/devicebound', '/nowhere']) {
    const sender = connection.open_sender(address);
    const refused = await nextEvent<string>((listener) => {
      sender.once('sender_close', (context) => listener(String((context.sender?.error as { condition?: string } | undefined)?.condition)));
    });
    assert.match(refused, /unauthorized-access|not-found/, address);
  }
  for (const address of ['/devices/someone/messages/devicebound', '/messages/serviceBound/feedback']) {
    const receiver = connection.open_receiver(address);
    const refused = await nextEvent<string>((listener) => {
      receiver.once('receiver_close', (context) => listener(String((context.receiver?.error as { condition?: string } | undefined)?.condition)));
    });
    assert.match(refused, /unauthorized-access/, address);
  }
  const cbs = connection.open_sender('$cbs');
  const replies = connection.open_receiver({ source: { address: '$cbs' } });
  await nextEvent<void>((listener) => cbs.once('sendable', () => listener()));
  const answers: number[] = [];
  replies.on('message', (context) => answers.push(Number(context.message!.application_properties!['status-code'])));
  for (const [name, body] of [
    ['localhost/devices/nobody', 'SharedAccessSignature sr=x&sig=y&se=1'],
    ['elsewhere/devices/x', 'not a token'],
    ['%E0%A4%A', 5],
    ['localhost', 'SharedAccessSignature sr=localhost&sig=AAAA&se=99999999999&skn=iothubowner'],
  ] as const) {
    cbs.send({
      body,
      message_id: randomId(),
      reply_to: 'cbs',
      application_properties: { operation: 'put-token', type: 'servicebus.windows.net:sastoken', name },
    } as never);
  }
  cbs.send({ body: 'x', message_id: randomId(), application_properties: { operation: 'delete-token' } } as never);
  await eventually(async () => (answers.length === 5 ? true : undefined), 10_000, 'five answers on the CBS link');
  // Answered as each check ends, so in any order.
  assert.deepEqual(answers.sort(), [400, 401, 401, 401, 401]);
  // Still serving: a device over AMQP opens and reads its twin.
  const client = await openDevice(t, 'amqp-after-fuzz', 'Amqp');
  assert.equal((await client.getTwin()).properties.reported.$version, 1);
});

function randomId(): string {
  return Math.random().toString(36).slice(2);
}
