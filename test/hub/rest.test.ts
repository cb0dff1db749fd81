/**
 * The cloud-side REST API with undici: registry, twins with ETag/If-Match,
 * C2D limits, telemetry follow (SSE), policy SAS, and fuzzing in the
 * service error shape (`{"Message":"ErrorCode:<Code>;…"}`).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { createSasToken } from '../../src/hub/domain/sas.ts';
import { connectDevice, nextMessage, restClient, serviceToken, startTestHub } from './helpers.ts';
import { metricIn } from '../helpers/index.ts';

const hub = await startTestHub({ after });

function errorCode(body: unknown): string | undefined {
  return /^ErrorCode:([A-Za-z]+);/.exec((body as { Message?: string }).Message ?? '')?.[1];
}

test('every call needs a hub policy SAS: none, wrong, expired or device-scoped tokens get 401', async () => {
  const device = await hub.createDevice('auth-probe');
  const soon = Math.floor(Date.now() / 1000) + 60;
  const tokens: Record<string, string> = {
    none: '',
    garbage: 'Bearer abc',
    'wrong key': serviceToken('localhost', device),
    expired: serviceToken('localhost', hub.ownerKey, -10),
    'device token': createSasToken('localhost/devices/auth-probe', device, soon),
    'other hub': createSasToken('elsewhere', hub.ownerKey, soon, 'iothubowner'),
    'unknown policy': createSasToken('localhost', hub.ownerKey, soon, 'nobody'),
  };
  for (const [name, token] of Object.entries(tokens)) {
    const client = await restClient(hub.restUrl, hub.ca, () => token);
    const { status, body } = await client.call('GET', '/devices');
    await client.agent.close();
    assert.equal(status, 401, name);
    assert.equal(errorCode(body), 'IotHubUnauthorizedAccess', name);
  }
  const health = await request(`${hub.restUrl}/health`, { dispatcher: (await restClient(hub.restUrl, hub.ca, () => '')).agent });
  assert.equal(health.statusCode, 200);
  await health.body.dump();
});

test('devices are created, read, listed, updated with If-Match, re-keyed and deleted', async () => {
  const created = await hub.rest('PUT', '/devices/crud-1', { deviceId: 'crud-1' });
  assert.equal(created.status, 200);
  const device = created.body as { etag: string; status: string; authentication: { symmetricKey: { primaryKey: string; secondaryKey: string } } };
  assert.equal(device.status, 'enabled');
  assert.equal(Buffer.from(device.authentication.symmetricKey.primaryKey, 'base64').length, 32);
  assert.equal(errorCode((await hub.rest('PUT', '/devices/crud-1', {})).body), 'DeviceAlreadyExists');
  assert.equal((await hub.rest('PUT', '/devices/crud-1', {})).status, 409);
  const read = await hub.rest('GET', '/devices/crud-1');
  assert.equal(read.headers.etag, `"${device.etag}"`);
  const listed = (await hub.rest('GET', '/devices')).body as { deviceId: string }[];
  assert.ok(listed.some((d) => d.deviceId === 'crud-1'));
  assert.equal((await hub.rest('PUT', '/devices/crud-1', { status: 'disabled' }, { 'if-match': '"stale"' })).status, 412);
  const disabled = await hub.rest('PUT', '/devices/crud-1', { status: 'disabled' }, { 'if-match': `"${device.etag}"` });
  assert.equal((disabled.body as { status: string }).status, 'disabled');
  const rekeyed = await hub.rest('POST', '/devices/crud-1/regenerateKey', { key: 'secondary' });
  const keys = (rekeyed.body as typeof device).authentication.symmetricKey;
  assert.equal(keys.primaryKey, device.authentication.symmetricKey.primaryKey);
  assert.notEqual(keys.secondaryKey, device.authentication.symmetricKey.secondaryKey);
  assert.equal((await hub.rest('PUT', '/devices/crud-1/modules/m1', {})).status, 200);
  assert.deepEqual(
    ((await hub.rest('GET', '/devices/crud-1/modules')).body as { moduleId: string }[]).map((m) => m.moduleId),
    ['m1'],
  );
  assert.equal((await hub.rest('DELETE', '/devices/crud-1')).status, 204);
  const gone = await hub.rest('GET', '/devices/crud-1');
  assert.equal(gone.status, 404);
  assert.equal(errorCode(gone.body), 'DeviceNotFound');
  assert.equal((await hub.rest('GET', '/devices/crud-1/modules/m1')).status, 404, 'modules go with their device');
});

test('twin PATCH needs a matching If-Match, merges tags and desired, and counts desired versions', async () => {
  await hub.createDevice('twin-rest');
  const first = await hub.rest('GET', '/twins/twin-rest');
  const twin = first.body as { etag: string; properties: { desired: { $version: number } } };
  assert.equal(twin.properties.desired.$version, 1);
  const stale = await hub.rest('PATCH', '/twins/twin-rest', { properties: { desired: { a: 1 } } }, { 'if-match': '"nope"' });
  assert.equal(stale.status, 412);
  assert.equal(errorCode(stale.body), 'PreconditionFailed');
  const patched = await hub.rest(
    'PATCH',
    '/twins/twin-rest',
    { tags: { site: 'lab' }, properties: { desired: { a: 1, b: { c: 2 } } } },
    { 'if-match': `"${twin.etag}"` },
  );
  assert.equal(patched.status, 200);
  const again = await hub.rest('PATCH', '/twins/twin-rest', { properties: { desired: { b: { c: null }, a: null } } }, { 'if-match': '*' });
  const result = again.body as { tags: unknown; properties: { desired: Record<string, unknown> } };
  assert.deepEqual(result.tags, { site: 'lab' });
  assert.deepEqual(result.properties.desired.b, {});
  assert.equal('a' in result.properties.desired, false);
  assert.equal(result.properties.desired.$version, 3);
  const replaced = await hub.rest('PUT', '/twins/twin-rest', { properties: { desired: { only: true } } });
  assert.deepEqual(Object.keys((replaced.body as typeof result).properties.desired).sort(), ['$metadata', '$version', 'only']);
});

test('C2D: at most 50 pending per device, 64 KB per message, typed fields', async () => {
  await hub.createDevice('c2d-limits');
  const path = '/devices/c2d-limits/messages/devicebound';
  const bad: Record<string, unknown> = {
    'no body': {},
    'body not a string': { body: 5 },
    'bad encoding': { body: 'x', bodyEncoding: 'rot13' },
    'bad ttl': { body: 'x', ttlSeconds: -1 },
    'bad property': { body: 'x', properties: { a: 1 } },
    'an array': [1],
  };
  for (const [name, body] of Object.entries(bad)) {
    const answer = await hub.rest('POST', path, body);
    assert.equal(answer.status, 400, name);
    assert.equal(errorCode(answer.body), 'ArgumentInvalid', name);
  }
  const big = await hub.rest('POST', path, { body: 'x'.repeat(64 * 1024 + 1) });
  assert.equal(big.status, 413);
  assert.equal(errorCode(big.body), 'MessageTooLarge');
  for (let i = 0; i < 50; i++) assert.equal((await hub.rest('POST', path, { body: `m${i}` })).status, 201);
  const full = await hub.rest('POST', path, { body: 'one too many' });
  assert.equal(full.status, 403);
  assert.equal(errorCode(full.body), 'DeviceMaximumQueueDepthExceeded');
  assert.equal(((await hub.rest('GET', '/devices/c2d-limits')).body as { cloudToDeviceMessageCount: number }).cloudToDeviceMessageCount, 50);
  assert.equal((await hub.rest('POST', '/devices/nobody-here/messages/devicebound', { body: 'x' })).status, 404);
});

test('C2D messages expire after their TTL without reaching the device', async () => {
  const key = await hub.createDevice('c2d-ttl');
  await hub.rest('POST', '/devices/c2d-ttl/messages/devicebound', { body: 'short-lived', ttlSeconds: 1 });
  await hub.rest('POST', '/devices/c2d-ttl/messages/devicebound', { body: 'long-lived' });
  await new Promise((resolve) => setTimeout(resolve, 1100));
  const client = await connectDevice(hub, 'c2d-ttl', key);
  const first = nextMessage(client, 'devices/c2d-ttl/messages/devicebound/');
  await client.subscribeAsync('devices/c2d-ttl/messages/devicebound/#', { qos: 1 });
  assert.equal((await first).payload.toString(), 'long-lived');
  await client.endAsync();
});

test('telemetry can be read by position and followed live as Server-Sent Events', async () => {
  const key = await hub.createDevice('sse');
  const response = await request(`${hub.restUrl}/messages/events?deviceId=sse`, {
    dispatcher: (await restClient(hub.restUrl, hub.ca, () => '')).agent,
    headers: { authorization: serviceToken('localhost', hub.ownerKey), accept: 'text/event-stream' },
  });
  assert.equal(response.statusCode, 200);
  assert.match(String(response.headers['content-type']), /^text\/event-stream/);
  const client = await connectDevice(hub, 'sse', key);
  await client.publishAsync('devices/sse/messages/events/%24.mid=live-1', '{"n":1}', { qos: 1 });
  let text = '';
  for await (const chunk of response.body) {
    text += chunk.toString();
    if (text.includes('live-1')) break;
  }
  response.body.destroy();
  const data = /data: (.*)\n/.exec(text)![1]!;
  const event = JSON.parse(data) as { deviceId: string; system: { messageId: string }; body: string; seq: number };
  assert.equal(event.deviceId, 'sse');
  assert.equal(event.body, '{"n":1}');
  const paged = (await hub.rest('GET', `/messages/events?since=${event.seq - 1}&limit=1`)).body as { messages: { seq: number }[] };
  assert.deepEqual(
    paged.messages.map((m) => m.seq),
    [event.seq],
  );
  await client.endAsync();
});

test('fuzzing: wrong types, broken JSON, huge bodies and path tricks answer in the error shape; the API keeps serving', async () => {
  const cases: [string, string, unknown, number][] = [
    ['PUT', '/devices/..%2F..%2Fetc%2Fpasswd', {}, 400],
    ['PUT', '/devices/%ZZ', {}, 400],
    ['GET', `/devices/${'a'.repeat(129)}`, undefined, 400],
    ['PUT', '/devices/fuzz', '{"status":', 400],
    ['PUT', '/devices/fuzz', { status: 5 }, 400],
    ['PUT', '/devices/fuzz', { authentication: { symmetricKey: { primaryKey: 'short' } } }, 400],
    ['PUT', '/devices/fuzz', [], 400],
    ['PATCH', '/twins/nobody', { properties: { desired: { a: 1 } } }, 404],
    ['POST', '/devices/fuzz/messages/devicebound', { body: 'x'.repeat(600 * 1024) }, 413],
    ['GET', '/messages/events?since=abc', undefined, 400],
    ['GET', '/messages/events?deviceId=%2F..', undefined, 400],
    ['GET', '/nothing/here', undefined, 404],
  ];
  for (const [method, path, body, status] of cases) {
    const answer = await hub.rest(method, path, body);
    assert.equal(answer.status, status, `${method} ${path}`);
    assert.match((answer.body as { Message: string }).Message, /^ErrorCode:\w+;/, `${method} ${path}`);
  }
  await hub.createDevice('fuzz');
  const twinCases: unknown[] = [
    { properties: [] },
    { properties: { desired: 'x' } },
    { properties: { reported: { a: 1 } } },
    { tags: { 'a.b': 1 } },
    { properties: { desired: { s: 'x'.repeat(5000) } } },
  ];
  for (const body of twinCases) {
    const answer = await hub.rest('PATCH', '/twins/fuzz', body);
    assert.equal(answer.status, 400, JSON.stringify(body).slice(0, 80));
    assert.equal(errorCode(answer.body), 'ArgumentInvalid');
  }
  const methodCases: unknown[] = [{}, { methodName: 'a/b' }, { methodName: 'ok', responseTimeoutInSeconds: 'x' }, 'plain'];
  for (const body of methodCases) assert.equal((await hub.rest('POST', '/twins/fuzz/methods', body)).status, 400, JSON.stringify(body));
  const twin = (await hub.rest('GET', '/twins/fuzz')).body as { version: number; properties: { desired: { $version: number } } };
  assert.equal(twin.version, 1, 'nothing was stored by the refused calls');
  assert.equal(twin.properties.desired.$version, 1);
});

test('a direct method the device does not answer in time gives 504; one it is not subscribed to gives 404', async () => {
  const key = await hub.createDevice('silent');
  const device = await connectDevice(hub, 'silent', key);
  const notSubscribed = await hub.rest('POST', '/twins/silent/methods', { methodName: 'reboot', responseTimeoutInSeconds: 5 });
  assert.equal(notSubscribed.status, 404);
  assert.equal(errorCode(notSubscribed.body), 'DeviceNotOnline');
  await device.subscribeAsync('$iothub/methods/POST/#');
  const request = nextMessage(device, '$iothub/methods/POST/reboot/');
  const late = await hub.rest('POST', '/twins/silent/methods', { methodName: 'reboot', responseTimeoutInSeconds: 1 });
  assert.equal(late.status, 504);
  assert.equal(errorCode(late.body), 'GatewayTimeout');
  const rid = /\$rid=(.+)$/.exec((await request).topic)![1]!;
  // The answer after the deadline is dropped; the connection and the hub carry on.
  await device.publishAsync(`$iothub/methods/res/200/?$rid=${rid}`, '{}');
  await device.subscribeAsync('$iothub/twin/res/#');
  const answer = nextMessage(device, '$iothub/twin/res/200/');
  await device.publishAsync('$iothub/twin/GET/?$rid=after', '');
  await answer;
  await device.endAsync();
});

test('each built-in policy has exactly its rights (registryRead, registryWrite, serviceConnect), 401 Unauthorized otherwise', async () => {
  const policies = JSON.parse(await readFile(join(hub.dataDir, 'hub', 'policies.json'), 'utf8')) as Record<string, { primaryKey: string }>;
  await hub.createDevice('rights-probe');
  await hub.rest('PUT', '/devices/rights-victim', {});
  // The attack: a `service` key read device keys, made devices, re-keyed them; a registry key sent C2D and patched twins.
  const calls: [right: string, method: string, path: string, body?: unknown][] = [
    ['registryRead', 'GET', '/devices'],
    ['registryRead', 'GET', '/devices/rights-probe'],
    ['registryRead', 'GET', '/devices/rights-probe/modules'],
    ['registryWrite', 'PUT', '/devices/rights-new', {}],
    ['registryWrite', 'POST', '/devices/rights-probe/regenerateKey', { key: 'secondary' }],
    ['registryWrite', 'DELETE', '/devices/rights-victim'],
    ['serviceConnect', 'GET', '/twins/rights-probe'],
    ['serviceConnect', 'PATCH', '/twins/rights-probe', { tags: { a: 1 } }],
    ['serviceConnect', 'POST', '/devices/rights-probe/messages/devicebound', { body: 'x' }],
    ['serviceConnect', 'GET', '/messages/events?limit=1'],
  ];
  const rights: Record<string, string[]> = {
    iothubowner: ['registryRead', 'registryWrite', 'serviceConnect'],
    service: ['serviceConnect'],
    registryRead: ['registryRead'],
    registryReadWrite: ['registryRead', 'registryWrite'],
    device: [],
  };
  const soon = Math.floor(Date.now() / 1000) + 600;
  for (const [policy, granted] of Object.entries(rights)) {
    const client = await restClient(hub.restUrl, hub.ca, () => createSasToken('localhost', policies[policy]!.primaryKey, soon, policy));
    for (const [right, method, path, body] of calls) {
      // A refused write must not have happened: the victim survives every policy but the ones allowed to delete it.
      const answer = await client.call(method, path, body);
      const what = `${policy} ${method} ${path}`;
      if (granted.includes(right)) {
        assert.ok(answer.status < 300, `${what}: ${answer.status}`);
        if (method === 'DELETE') await hub.rest('PUT', '/devices/rights-victim', {});
        if (method === 'PUT') await hub.rest('DELETE', path);
        continue;
      }
      assert.equal(answer.status, 401, what);
      assert.equal((answer.body as { Message: string }).Message, 'ErrorCode:IotHubUnauthorizedAccess;Unauthorized', what);
      assert.equal(answer.headers['www-authenticate'], 'SharedAccessSignature', what);
    }
    await client.agent.close();
  }
  assert.equal((await hub.rest('GET', '/devices/rights-victim')).status, 200, 'no refused policy deleted the device');
  assert.equal((await hub.rest('GET', '/devices/rights-new')).status, 404, 'no refused policy created a device');
});

test('metrics: GET /metrics on the REST port counts telemetry, reported patches and C2D sends', async () => {
  const read = async () => {
    const answer = await hub.rest('GET', '/metrics');
    assert.equal(answer.status, 200);
    return (kind: string) => metricIn(String(answer.body), 'offcloud_hub_activity_total', { kind, component: 'hub' }) ?? 0;
  };
  const before = await read();
  const key = await hub.createDevice('metered');
  const client = await connectDevice(hub, 'metered', key);
  await client.subscribeAsync('$iothub/twin/res/#');
  for (let i = 0; i < 3; i++) await client.publishAsync('devices/metered/messages/events/', `{"n":${i}}`, { qos: 1 });
  const patched = nextMessage(client, '$iothub/twin/res/204/');
  await client.publishAsync('$iothub/twin/PATCH/properties/reported/?$rid=m1', JSON.stringify({ battery: 80 }));
  await patched;
  assert.ok((await hub.rest('POST', '/devices/metered/messages/devicebound', { body: 'hello' })).status < 300);
  await client.endAsync();
  const after = await read();
  assert.equal(after('telemetry') - before('telemetry'), 3);
  assert.equal(after('reported-patch') - before('reported-patch'), 1);
  assert.equal(after('c2d-sent') - before('c2d-sent'), 1);
});
