/**
 * The vendor's device SDK (azure-iot-device + azure-iot-device-mqtt),
 * unmodified, against the hub over TLS, trusting the local CA via setOptions.
 */
import { after, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import deviceSdk from 'azure-iot-device';
import mqttTransport from 'azure-iot-device-mqtt';
import { eventually, nextEvent, startTestHub, type TestHub } from './helpers.ts';

const { Client, Message, ModuleClient, SharedAccessKeyAuthenticationProvider } = deviceSdk;
type DeviceClient = InstanceType<typeof Client>;
type Twin = Awaited<ReturnType<DeviceClient['getTwin']>>;

const hub: TestHub = await startTestHub({ after });

async function openDevice(t: TestContext, id: string, prepare?: (client: DeviceClient) => void): Promise<DeviceClient> {
  const key = await hub.createDevice(id);
  const client = Client.fromConnectionString(hub.connectionString(id, key), mqttTransport.Mqtt);
  await client.setOptions({ ca: hub.ca });
  prepare?.(client);
  await client.open();
  t.after(() => client.close());
  return client;
}

/** `properties.reported.update` takes a callback only. */
function updateReported(twin: Twin, patch: Record<string, unknown>): Promise<void> {
  return new Promise((resolve, reject) => {
    twin.properties.reported.update(patch, (err?: Error) => (err ? reject(err) : resolve()));
  });
}

interface Telemetry {
  deviceId: string;
  moduleId?: string;
  system: Record<string, string>;
  properties: Record<string, string>;
  body: string;
}

async function telemetryOf(deviceId: string): Promise<Telemetry[]> {
  return eventually(
    async () => {
      const { body } = await hub.rest('GET', `/messages/events?deviceId=${deviceId}`);
      const messages = (body as { messages: Telemetry[] }).messages;
      return messages.length ? messages : undefined;
    },
    5000,
    `telemetry of ${deviceId}`,
  );
}

test('R-TWIN-1 R-TWIN-2 R-TWIN-4 the SDK opens over TLS with a SAS token and sends telemetry with properties', async (t) => {
  const client = await openDevice(t, 'sdk-telemetry');
  const message = new Message(JSON.stringify({ temperature: 21.5 }));
  message.messageId = 'mid-1';
  message.correlationId = 'cid-1';
  message.contentType = 'application/json';
  message.contentEncoding = 'utf-8';
  message.properties.add('alert', 'yes please');
  message.properties.add('k&=', 'v/?#');
  const sent = await client.sendEvent(message);
  assert.equal(sent.constructor.name, 'MessageEnqueued');
  const [received] = await telemetryOf('sdk-telemetry');
  assert.deepEqual(received!.system, { messageId: 'mid-1', correlationId: 'cid-1', contentType: 'application/json', contentEncoding: 'utf-8' });
  assert.deepEqual(received!.properties, { alert: 'yes please', 'k&=': 'v/?#' });
  assert.deepEqual(JSON.parse(received!.body), { temperature: 21.5 });
});

test('R-TWIN-9 getTwin returns the desired and reported properties with their versions', async (t) => {
  const client = await openDevice(t, 'sdk-get');
  const twin: Twin = await client.getTwin();
  assert.equal(twin.properties.desired.$version, 1);
  assert.equal(twin.properties.reported.$version, 1);
});

test('R-TWIN-6 R-TWIN-7 R-TWIN-8 reported updates merge, null deletes, each change counts one version', async (t) => {
  const client = await openDevice(t, 'sdk-reported');
  const twin: Twin = await client.getTwin();
  await updateReported(twin, { temp: 21.5, obj: { x: 1, y: 2 }, gone: 'soon' });
  await updateReported(twin, { gone: null, obj: { y: null, z: 3 } });
  const { body } = await hub.rest('GET', '/twins/sdk-reported');
  const reported = (body as { properties: { reported: Record<string, unknown> } }).properties.reported;
  assert.equal(reported.temp, 21.5);
  assert.deepEqual(reported.obj, { x: 1, z: 3 });
  assert.equal('gone' in reported, false);
  assert.equal(reported.$version, 3, 'a new twin is at version 1; two changes make 3');
});

test('desired properties updated through the REST API are pushed to the SDK', async (t) => {
  const client = await openDevice(t, 'sdk-desired');
  const twin: Twin = await client.getTwin();
  const pushed = nextEvent<Record<string, unknown>>(
    (listener) => {
      twin.on('properties.desired', (patch: Record<string, unknown>) => {
        if (patch.target !== undefined) listener(patch);
      });
    },
    5000,
    'desired push',
  );
  const patched = await hub.rest('PATCH', '/twins/sdk-desired', { properties: { desired: { target: 22, nested: { a: 1 } } } }, { 'if-match': '*' });
  assert.equal(patched.status, 200);
  const patch = await pushed;
  assert.equal(patch.target, 22);
  assert.deepEqual(patch.nested, { a: 1 });
  assert.equal(patch.$version, 2);
  assert.equal(twin.properties.desired.$version, 2);
});

test('R-TWIN-5 cloud-to-device messages queued while offline arrive on open and complete on PUBACK', async (t) => {
  const key = await hub.createDevice('sdk-c2d');
  const sent = await hub.rest('POST', '/devices/sdk-c2d/messages/devicebound', {
    body: 'hello device',
    messageId: 'm-1',
    correlationId: 'c-1',
    contentType: 'text/plain',
    ack: 'full',
    properties: { myProp: 'hello world/?&=' },
  });
  assert.equal(sent.status, 201);
  const client = Client.fromConnectionString(hub.connectionString('sdk-c2d', key), mqttTransport.Mqtt);
  await client.setOptions({ ca: hub.ca });
  t.after(() => client.close());
  const received = nextEvent<InstanceType<typeof Message>>((listener) => client.on('message', listener), 5000, 'C2D message');
  await client.open();
  const message = await received;
  await client.complete(message);
  assert.equal(message.data.toString(), 'hello device');
  assert.equal(message.messageId, 'm-1');
  assert.equal(message.correlationId, 'c-1');
  assert.equal(message.to, '/devices/sdk-c2d/messages/devicebound');
  assert.equal(message.properties.getValue('myProp'), 'hello world/?&=');
  assert.equal(message.properties.getValue('iothub-ack'), 'full');
  await eventually(
    async () => {
      const { body } = await hub.rest('GET', '/devices/sdk-c2d');
      return (body as { cloudToDeviceMessageCount: number }).cloudToDeviceMessageCount === 0 ? true : undefined;
    },
    5000,
    'queue emptied by the PUBACK',
  );
  const live = nextEvent<InstanceType<typeof Message>>((listener) => client.on('message', listener), 5000, 'second C2D message');
  await hub.rest('POST', '/devices/sdk-c2d/messages/devicebound', { body: 'while online' });
  assert.equal((await live).data.toString(), 'while online');
});

test('a direct method round trip: REST invoke, SDK handler, REST result', async (t) => {
  const client = await openDevice(t, 'sdk-method', (c) =>
    c.onDeviceMethod('reboot', (request, response) => {
      void response.send(200, { ok: true, echo: request.payload });
    }),
  );
  assert.ok(client);
  const result = await eventually(
    async () => {
      const r = await hub.rest('POST', '/twins/sdk-method/methods', { methodName: 'reboot', responseTimeoutInSeconds: 5, payload: { delay: 3 } });
      return r.status === 200 ? r : undefined;
    },
    5000,
    'method subscription',
  );
  assert.deepEqual(result.body, { status: 200, payload: { ok: true, echo: { delay: 3 } } });
  const offline = await hub.rest('POST', '/twins/sdk-nobody/methods', { methodName: 'reboot' });
  assert.equal(offline.status, 404);
});

test('R-TWIN-2 the SDK renews its token by reconnecting with the same client id and keeps working', async (t) => {
  const key = await hub.createDevice('sdk-renew');
  // Tokens valid 4 s, renewed 2 s before expiry: a renewal (disconnect + CONNECT) every 2 s.
  const provider = SharedAccessKeyAuthenticationProvider.fromConnectionString(hub.connectionString('sdk-renew', key), 4, 2);
  const client = Client.fromAuthenticationProvider(provider, mqttTransport.Mqtt);
  await client.setOptions({ ca: hub.ca });
  t.after(() => client.close());
  await client.open();
  let renewals = 0;
  await nextEvent<void>(
    (listener) =>
      provider.on('newTokenAvailable', () => {
        renewals++;
        if (renewals === 3) listener();
      }),
    15_000,
    'three token renewals',
  );
  // The first token has expired by now: this goes over a connection opened with a renewed one.
  await client.sendEvent(new Message('after renewal'));
  const twin: Twin = await client.getTwin();
  await updateReported(twin, { renewed: true });
  const { body } = await hub.rest('GET', '/twins/sdk-renew');
  assert.equal((body as { properties: { reported: { renewed?: boolean } } }).properties.reported.renewed, true);
  assert.equal((body as { connectionState: string }).connectionState, 'Connected');
});

test('a module identity connects with its own key, sends telemetry, answers methods and keeps its own twin', async (t) => {
  await hub.createDevice('sdk-edge');
  const key = await hub.createDevice('sdk-edge/filter');
  const client = ModuleClient.fromConnectionString(hub.connectionString('sdk-edge/filter', key), mqttTransport.Mqtt);
  await client.setOptions({ ca: hub.ca });
  t.after(() => client.close());
  client.onMethod('ping', (_request, response) => {
    void response?.send(200, 'pong');
  });
  await client.open();
  await client.sendEvent(new Message('from the module'));
  const [received] = await telemetryOf('sdk-edge');
  assert.equal(received!.moduleId, 'filter');
  assert.equal(received!.body, 'from the module');
  const twin: Twin = await client.getTwin();
  await updateReported(twin, { stage: 'filtering' });
  const moduleTwin = await hub.rest('GET', '/twins/sdk-edge/modules/filter');
  assert.equal((moduleTwin.body as { properties: { reported: { stage: string } } }).properties.reported.stage, 'filtering');
  const method = await eventually(
    async () => {
      const r = await hub.rest('POST', '/twins/sdk-edge/modules/filter/methods', { methodName: 'ping', responseTimeoutInSeconds: 5 });
      return r.status === 200 ? r : undefined;
    },
    5000,
    'module method',
  );
  assert.deepEqual(method.body, { status: 200, payload: 'pong' });
  const deviceTwin = await hub.rest('GET', '/twins/sdk-edge');
  assert.equal((deviceTwin.body as { properties: { reported: { stage?: string } } }).properties.reported.stage, undefined);
});

test('a realistic hub name: the printed demo connection string (HostName=myhub…, GatewayHostName=localhost) works as is', async (t) => {
  const named = await startTestHub(t, { hostName: 'myhub.azure-devices.net', demoDevice: 'gw-device' });
  const connection = named.facts.demoDevice!.connectionString;
  const key = /SharedAccessKey=([^;]+)/.exec(connection)![1]!;
  assert.equal(connection, `HostName=myhub.azure-devices.net;DeviceId=gw-device;SharedAccessKey=${key};GatewayHostName=localhost:${named.mqttPort}`);
  const client = Client.fromConnectionString(connection, mqttTransport.Mqtt);
  await client.setOptions({ ca: named.ca });
  t.after(() => client.close());
  await client.open();
  const twin: Twin = await client.getTwin();
  await updateReported(twin, { via: 'gateway' });
  const { body } = await named.rest('GET', '/twins/gw-device');
  assert.equal((body as { properties: { reported: { via: string } } }).properties.reported.via, 'gateway');
  // The same device signing for another hub name is refused.
  const wrongHub = Client.fromConnectionString(
    `HostName=otherhub.azure-devices.net;DeviceId=gw-device;SharedAccessKey=${key};GatewayHostName=localhost:${named.mqttPort}`,
    mqttTransport.Mqtt,
  );
  await wrongHub.setOptions({ ca: named.ca });
  wrongHub.on('error', () => undefined);
  await assert.rejects(wrongHub.open(), { name: 'UnauthorizedError' });
});
