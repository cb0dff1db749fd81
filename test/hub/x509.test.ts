/**
 * X.509 device authentication, with the unmodified SDKs:
 * devices registered through azure-iothub's Registry as `selfSigned` (by
 * thumbprint) or `certificateAuthority` connect with their client certificate
 * over every device transport (Mqtt, MqttWs, Amqp, AmqpWs, Http); a CA counts
 * once uploaded and verified by proof of possession; a wrong certificate is
 * refused at once.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import deviceSdk from 'azure-iot-device';
import mqttTransport from 'azure-iot-device-mqtt';
import amqpTransport from 'azure-iot-device-amqp';
import httpTransport from 'azure-iot-device-http';
import serviceSdk from 'azure-iothub';
import { eventually, PortAgent, routeServiceSdkTo, startTestHub, type TestHub } from './helpers.ts';
import { issue } from './certificates.ts';

const { Client, Message } = deviceSdk;
type DeviceClient = InstanceType<typeof Client>;

const hub: TestHub = await startTestHub({ after });
after(routeServiceSdkTo(hub));
const restPort = Number(new URL(hub.restUrl).port);
const registry = serviceSdk.Registry.fromConnectionString(`HostName=localhost;SharedAccessKeyName=iothubowner;SharedAccessKey=${hub.ownerKey}`);

const TRANSPORTS = {
  Mqtt: { transport: mqttTransport.Mqtt, host: `localhost:${hub.mqttPort}`, options: {} },
  MqttWs: { transport: mqttTransport.MqttWs, host: 'localhost', options: { mqtt: { webSocketAgent: new PortAgent(restPort) } } },
  Amqp: { transport: amqpTransport.Amqp, host: `localhost:${hub.amqpPort}`, options: {} },
  AmqpWs: { transport: amqpTransport.AmqpWs, host: 'localhost', options: { amqp: { webSocketAgent: new PortAgent(restPort) } } },
  // A receivePolicy too: the Http transport's setOptions answers only when `http` has one.
  Http: { transport: httpTransport.Http, host: 'localhost', options: { http: { agent: new PortAgent(restPort), receivePolicy: { interval: 1 } } } },
} as const;
type TransportName = keyof typeof TRANSPORTS;

/** A device client with `x509=true` in its connection string and its certificate (and chain) and key in setOptions, as the SDK's samples do. */
async function x509Client(deviceId: string, name: TransportName, certificate: { cert: string; key: string }): Promise<DeviceClient> {
  const { transport, host, options } = TRANSPORTS[name];
  const client = Client.fromConnectionString(`HostName=${host};DeviceId=${deviceId};x509=true`, transport);
  await client.setOptions({ ca: hub.ca, cert: certificate.cert, key: certificate.key, ...options } as Parameters<DeviceClient['setOptions']>[0]);
  return client;
}

/** Opens, sends one message, reads the twin where the transport has twins, and closes; the message must reach the hub. */
async function sendsTelemetry(deviceId: string, name: TransportName, certificate: { cert: string; key: string }): Promise<void> {
  const client = await x509Client(deviceId, name, certificate);
  try {
    await client.open();
    const message = new Message(JSON.stringify({ over: name }));
    message.messageId = `${deviceId}-${name}`;
    await client.sendEvent(message);
    if (name !== 'Http') {
      const twin = await client.getTwin();
      assert.equal(typeof twin.properties.desired.$version, 'number');
    }
  } finally {
    await client.close();
  }
  await eventually(
    async () => {
      const { body } = await hub.rest('GET', `/messages/events?deviceId=${deviceId}`);
      return (body as { messages: { system: Record<string, string> }[] }).messages.find((m) => m.system.messageId === `${deviceId}-${name}`);
    },
    10_000,
    `the ${name} telemetry of ${deviceId} in the hub's message log`,
  );
}

/**
 * Opening (MQTT: CONNACK 5), or else the first message (AMQP: the link is refused, the SDK puts no
 * token for X.509; HTTP: 401), must fail, at once, not by retrying for ever.
 */
async function refused(deviceId: string, name: TransportName, certificate: { cert: string; key: string }): Promise<void> {
  const client = await x509Client(deviceId, name, certificate);
  try {
    await assert.rejects(
      async () => {
        await client.open();
        await client.sendEvent(new Message('x'));
      },
      /nauthori[sz]ed|not authorized|401/i,
      `${deviceId} over ${name}`,
    );
  } finally {
    await client.close().catch(() => undefined);
  }
}

const selfSigned = await issue('CN=x509-self');
const other = await issue('CN=x509-self');

test('a selfSigned device registered by Registry.create with its thumbprint connects with its certificate over Mqtt, MqttWs, Amqp, AmqpWs and Http', async () => {
  await registry.create({ deviceId: 'x509-self', authentication: { x509Thumbprint: { primaryThumbprint: selfSigned.thumbprint } } } as never);
  const { responseBody: device } = await registry.get('x509-self');
  // The SDK's Authentication type has no `type`, though the service sends it.
  assert.equal((device.authentication as { type?: string }).type, 'selfSigned');
  assert.equal(device.authentication?.x509Thumbprint?.primaryThumbprint, selfSigned.thumbprint);
  assert.equal(device.authentication?.symmetricKey?.primaryKey, null);
  const { responseBody: twin } = await registry.getTwin('x509-self');
  assert.equal((twin as unknown as { authenticationType: string }).authenticationType, 'selfSigned');
  for (const name of Object.keys(TRANSPORTS) as TransportName[]) await sendsTelemetry('x509-self', name, selfSigned);
});

test('a certificate whose thumbprint is not registered, or a SAS device presenting a certificate, is refused at once on every transport', async () => {
  await hub.createDevice('x509-sas');
  for (const name of Object.keys(TRANSPORTS) as TransportName[]) {
    await refused('x509-self', name, other);
    await refused('x509-sas', name, selfSigned);
  }
});

test('the secondary thumbprint (SHA-256 here) works too, and a registration without any thumbprint or with a malformed one is refused with 400', async () => {
  const sha256 = (await import('node:crypto'))
    .createHash('sha256')
    .update(new (await import('node:crypto')).X509Certificate(other.cert).raw)
    .digest('hex');
  await registry.create({
    deviceId: 'x509-second',
    authentication: { type: 'selfSigned', x509Thumbprint: { primaryThumbprint: selfSigned.thumbprint, secondaryThumbprint: sha256 } },
  } as never);
  await sendsTelemetry('x509-second', 'Mqtt', other);
  for (const authentication of [
    { type: 'selfSigned', x509Thumbprint: {} },
    { type: 'selfSigned', x509Thumbprint: { primaryThumbprint: 'not-hex' } },
    { type: 'selfSigned', x509Thumbprint: { primaryThumbprint: 42 } },
    { type: 'none' },
    { type: ['selfSigned'] },
  ]) {
    const answer = await hub.rest('PUT', '/devices/x509-bad', { deviceId: 'x509-bad', authentication });
    assert.equal(answer.status, 400, JSON.stringify(authentication));
    assert.match((answer.body as { Message: string }).Message, /^ErrorCode:ArgumentInvalid;/);
  }
});

interface CertificateView {
  name: string;
  etag: string;
  properties: { isVerified: boolean; subject: string; thumbprint: string; verificationCode?: string };
}

test('a certificateAuthority device connects once its CA is uploaded and verified by proof of possession, through an intermediate it sends, on every transport', async () => {
  const root = await issue('CN=offcloud test root', { ca: true });
  const intermediate = await issue('CN=offcloud test intermediate', { ca: true, issuer: root });
  const device = await issue('CN=x509-ca', { issuer: intermediate });
  // The device sends its certificate and the intermediate, as a device whose CA is an intermediate does.
  const withChain = { cert: device.cert + intermediate.cert, key: device.key };
  await registry.create({ deviceId: 'x509-ca', authentication: { type: 'certificateAuthority' } } as never);
  assert.equal(((await registry.get('x509-ca')).responseBody.authentication as { type?: string }).type, 'certificateAuthority');

  const uploaded = await hub.rest('PUT', '/certificates/test-root', { properties: { certificate: root.cert } });
  assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));
  const view = uploaded.body as CertificateView;
  assert.equal(view.properties.isVerified, false);
  assert.equal(view.properties.subject, 'offcloud test root');
  assert.equal(view.properties.thumbprint, root.thumbprint);
  // Uploaded but not verified: it does not authenticate devices yet.
  await refused('x509-ca', 'Mqtt', withChain);

  const coded = await hub.rest('POST', '/certificates/test-root/generateVerificationCode', undefined, { 'if-match': view.etag });
  assert.equal(coded.status, 200, JSON.stringify(coded.body));
  const { verificationCode } = (coded.body as CertificateView).properties;
  assert.match(verificationCode!, /^[0-9A-F]{48}$/);
  // A proof signed by another key, or with another CN, is refused.
  for (const proof of [await issue(`CN=${verificationCode}`), await issue('CN=not-the-code', { issuer: root })]) {
    const answer = await hub.rest('POST', '/certificates/test-root/verify', { certificate: proof.cert }, { 'if-match': (coded.body as CertificateView).etag });
    assert.equal(answer.status, 400, JSON.stringify(answer.body));
  }
  const proof = await issue(`CN=${verificationCode}`, { issuer: root });
  const verified = await hub.rest('POST', '/certificates/test-root/verify', { certificate: proof.cert }, { 'if-match': (coded.body as CertificateView).etag });
  assert.equal(verified.status, 200, JSON.stringify(verified.body));
  assert.equal((verified.body as CertificateView).properties.isVerified, true);
  assert.deepEqual(
    ((await hub.rest('GET', '/certificates')).body as { value: CertificateView[] }).value.map((c) => [c.name, c.properties.isVerified]),
    [['test-root', true]],
  );

  for (const name of Object.keys(TRANSPORTS) as TransportName[]) await sendsTelemetry('x509-ca', name, withChain);
  // Without the intermediate the chain does not reach the CA; a certificate for another CN does not name this device.
  await refused('x509-ca', 'Amqp', device);
  const impostor = await issue('CN=someone-else', { issuer: intermediate });
  await refused('x509-ca', 'Mqtt', { cert: impostor.cert + intermediate.cert, key: impostor.key });

  // Deleted, the CA authenticates no one.
  const current = (await hub.rest('GET', '/certificates/test-root')).body as CertificateView;
  assert.equal((await hub.rest('DELETE', '/certificates/test-root', undefined, { 'if-match': current.etag })).status, 200);
  await refused('x509-ca', 'Http', withChain);
});

test('the certificates API answers bad input with the hub error shape and keeps what it holds', async () => {
  const ca = await issue('CN=fuzz root', { ca: true });
  const leaf = await issue('CN=fuzz leaf');
  assert.equal((await hub.rest('PUT', '/certificates/keep', { properties: { certificate: ca.cert, isVerified: true } })).status, 200);
  const cases: [string, string, unknown, Record<string, string>?][] = [
    ['PUT', '/certificates/bad', { properties: { certificate: 'not a certificate' } }],
    ['PUT', '/certificates/bad', { properties: { certificate: leaf.cert } }],
    ['PUT', '/certificates/bad', { properties: { certificate: 42 } }],
    ['PUT', '/certificates/bad', { properties: { certificate: ca.cert, isVerified: 'yes' } }],
    ['PUT', '/certificates/bad', '{"properties":'],
    ['PUT', '/certificates/bad', { properties: { certificate: 'A'.repeat(100_000) } }],
    ['PUT', `/certificates/${'n'.repeat(65)}`, { properties: { certificate: ca.cert } }],
    ['PUT', '/certificates/..%2Fkeep', { properties: { certificate: ca.cert } }],
    ['PUT', '/certificates/keep', { properties: { certificate: ca.cert } }],
    ['PUT', '/certificates/keep', { properties: { certificate: ca.cert } }, { 'if-match': '"stale"' }],
    ['POST', '/certificates/keep/verify', { certificate: ca.cert }],
    ['GET', '/certificates/missing', undefined],
    ['DELETE', '/certificates/missing', undefined],
    ['POST', '/certificates/__proto__/generateVerificationCode', undefined],
  ];
  for (const [method, path, body, headers] of cases) {
    const answer = await hub.rest(method, path, body, headers);
    assert.ok([400, 404, 412, 413].includes(answer.status), `${method} ${path}: ${answer.status}`);
    assert.match((answer.body as { Message: string }).Message, /^ErrorCode:\w+;/, `${method} ${path}`);
  }
  const list = (await hub.rest('GET', '/certificates')).body as { value: CertificateView[] };
  assert.ok(!list.value.some((c) => c.name !== 'keep' && c.name !== 'test-root'), JSON.stringify(list.value.map((c) => c.name)));
  const kept = list.value.find((c) => c.name === 'keep')!;
  assert.equal(kept.properties.isVerified, true);
  assert.equal(kept.properties.thumbprint, ca.thumbprint);
});
