/**
 * The hub's plain functions, checked against the vendor SDKs' own token
 * makers and the reference's rules: SAS signing, property bags, twin merge,
 * size, depth and versions.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import deviceSdk from 'azure-iot-device';
import serviceSdk from 'azure-iothub';
import { createSasToken, isExpired, parseSasToken, resourceCovers, signedWith } from '../../src/hub/domain/sas.ts';
import { describeBody, encodePropertyBag, parsePropertyBag, TelemetryLog } from '../../src/hub/domain/messages.ts';
import { DEFAULT_TWIN_LIMITS, depthOf, mergePatch, newTwin, patchReportedProperties, sizeOf, updateDesiredProperties } from '../../src/hub/domain/twin.ts';
import { checkIfMatch, parseUsername } from '../../src/hub/domain/hub.ts';

const KEY = Buffer.alloc(32, 7).toString('base64');
const soon = () => Math.floor(Date.now() / 1000) + 600;

test('R-TWIN-2 device tokens made by azure-iot-device verify, for exactly their device', () => {
  const vendor = deviceSdk.SharedAccessSignature.create('myhub.example', 'dev(1)!', KEY, soon()).toString();
  const token = parseSasToken(vendor)!;
  assert.ok(token, vendor);
  assert.equal(token.resource, 'myhub.example/devices/dev(1)!');
  assert.ok(signedWith(token, KEY));
  assert.ok(!signedWith(token, Buffer.alloc(32, 8).toString('base64')));
  assert.ok(resourceCovers(token.resource, 'myhub.example/devices/dev(1)!'));
  assert.ok(!resourceCovers(token.resource, 'myhub.example/devices/dev(1)!x'));
  assert.ok(!resourceCovers(token.resource, 'myhub.example/devices/other'));
  assert.ok(resourceCovers('localhost:8883/devices/d1', 'localhost/devices/D1'), 'port and case are ignored');
  assert.ok(resourceCovers('localhost/devices/d1/api-version=2016-11-14', 'localhost/devices/d1'), 'a trailing path is accepted');
  assert.ok(isExpired(parseSasToken(createSasToken('h/devices/d', KEY, 1000))!));
});

test('service tokens made by azure-iothub verify with the policy key and name', () => {
  const vendor = serviceSdk.SharedAccessSignature.create('myhub.example', 'iothubowner', KEY, soon()).toString();
  const token = parseSasToken(vendor)!;
  assert.equal(token.keyName, 'iothubowner');
  assert.equal(token.resource, 'myhub.example');
  assert.ok(signedWith(token, KEY));
  for (const broken of [
    'SharedAccessSignature sr=a&se=1',
    'SharedAccessSignature sr=a&sig=b&se=soon',
    'Bearer x',
    'SharedAccessSignature sr=%E0%A4%A&sig=b&se=1',
  ]) {
    assert.equal(parseSasToken(broken), undefined, broken);
  }
});

test('R-TWIN-2 R-TWIN-3 usernames: api-version with or without ?, extra parameters; missing or old ones forbid twins', () => {
  assert.deepEqual(parseUsername('h/d1/api-version=2016-11-14', 'd1'), { host: 'h', twinAllowed: true });
  assert.deepEqual(parseUsername('h/d1/?api-version=2021-04-12&DeviceClientType=x', 'd1'), { host: 'h', twinAllowed: true });
  assert.deepEqual(parseUsername('h:8883/d1/m1/?api-version=2020-09-30', 'd1/m1'), { host: 'h:8883', twinAllowed: true });
  assert.deepEqual(parseUsername('h/d1/', 'd1'), { host: 'h', twinAllowed: false });
  assert.deepEqual(parseUsername('h/d1', 'd1'), { host: 'h', twinAllowed: false });
  assert.deepEqual(parseUsername('h/d1/api-version=2015-08-15', 'd1'), { host: 'h', twinAllowed: false });
  assert.equal(parseUsername('h/d2/api-version=2016-11-14', 'd1'), undefined);
  assert.equal(parseUsername('h/d10/api-version=2016-11-14', 'd1'), undefined);
});

test('R-TWIN-4 property bags decode %24 and $ keys, percent-encoded keys and values, keys without =', () => {
  assert.deepEqual(parsePropertyBag('%24.mid=mid-1&%24.cid=cid-1&%24.ct=application%2Fjson&%24.ce=utf-8&alert=yes%20please&k%26%3D=v%2F%3F%23'), {
    system: { messageId: 'mid-1', correlationId: 'cid-1', contentType: 'application/json', contentEncoding: 'utf-8' },
    properties: { alert: 'yes please', 'k&=': 'v/?#' },
  });
  assert.deepEqual(parsePropertyBag('$.mid=a&flag'), { system: { messageId: 'a' }, properties: { flag: '' } });
  assert.throws(() => parsePropertyBag('a=%E0%A4%A'), /percent-encoding/);
  const bag = { system: { messageId: 'm/1', to: '/devices/d/messages/devicebound' }, properties: { 'a b': "x&y=z/'" } };
  const encoded = encodePropertyBag(bag);
  assert.ok(!encoded.includes('/'), 'no raw / in a bag: the SDK splits the topic on it');
  assert.deepEqual(parsePropertyBag(encoded), bag);
});

test('R-TWIN-6 R-TWIN-8 merge-patch: objects merge, null deletes, arrays replace; each change adds one version', () => {
  assert.deepEqual(mergePatch({ a: { b: 1, c: [1, 2] }, d: 1 }, { a: { b: null, c: [3] }, d: null, e: { f: null } }), { a: { c: [3] }, e: {} });
  let twin = newTwin();
  assert.equal(twin.reported.version, 1);
  twin = patchReportedProperties(twin, { a: 1 }, DEFAULT_TWIN_LIMITS);
  twin = patchReportedProperties(twin, { a: 1 }, DEFAULT_TWIN_LIMITS);
  twin = patchReportedProperties(twin, { a: null }, DEFAULT_TWIN_LIMITS);
  assert.equal(twin.reported.version, 4);
  assert.deepEqual(twin.reported.properties, {});
  assert.equal(twin.desired.version, 1, 'desired counts its own changes');
  const change = updateDesiredProperties(twin, { desired: { x: 1 } }, DEFAULT_TWIN_LIMITS, false);
  assert.deepEqual(change.push, { x: 1, $version: 2 });
  assert.equal(change.twin.reported.version, 4);
});

test('every twin change, reported or desired, gets an etag no earlier version had, and If-Match with an earlier one is refused', () => {
  let twin = newTwin();
  const seen = new Set([twin.etag]);
  for (let i = 0; i < 1000; i++) {
    const earlier = twin.etag;
    twin =
      i % 2 === 0
        ? patchReportedProperties(twin, { count: i }, DEFAULT_TWIN_LIMITS)
        : updateDesiredProperties(twin, { desired: { count: i } }, DEFAULT_TWIN_LIMITS, false).twin;
    assert.ok(!seen.has(twin.etag), `change ${i} reused the etag ${twin.etag}`);
    seen.add(twin.etag);
    assert.throws(() => checkIfMatch(`"${earlier}"`, twin.etag), /does not match/);
    checkIfMatch(`"${twin.etag}"`, twin.etag);
  }
});

test('twin sizes and depth are counted as the reference describes', () => {
  assert.equal(sizeOf({ ab: 'xyz', n: 1, b: true, o: { k: null } }), 2 + 3 + 1 + 8 + 1 + 4 + 1 + 1);
  assert.equal(sizeOf({ s: 'a\u0001b' }), 1 + 2, 'control characters are not counted');
  assert.equal(depthOf({ a: { b: { c: 1 } } }), 3);
  const tooDeep = JSON.parse(`${'{"a":'.repeat(11)}1${'}'.repeat(11)}`) as Record<string, never>;
  assert.throws(() => patchReportedProperties(newTwin(), tooDeep, DEFAULT_TWIN_LIMITS), /deeper than 10/);
  assert.doesNotThrow(() => patchReportedProperties(newTwin(), tooDeep, { ...DEFAULT_TWIN_LIMITS, maxDepth: 11 }));
});

test('the telemetry log keeps the last N messages and reads them by position', () => {
  const log = new TelemetryLog(3);
  const message = (deviceId: string) => ({ deviceId, enqueuedTimeUtc: '', system: {}, properties: {}, body: '', bodyEncoding: 'utf8' as const });
  for (const id of ['a', 'b', 'a', 'b', 'a']) log.append(message(id));
  assert.deepEqual(
    log.since(0, 10).map((m) => m.seq),
    [3, 4, 5],
  );
  assert.deepEqual(
    log.since(3, 10).map((m) => m.seq),
    [4, 5],
  );
  assert.deepEqual(
    log.since(0, 10, 'a').map((m) => m.seq),
    [3, 5],
  );
  assert.deepEqual(
    log.since(0, 1).map((m) => m.seq),
    [3],
  );
  assert.deepEqual(log.since(5, 10), []);
  assert.equal(log.lastSeq, 5);
});

test('message bodies are kept as text when they are UTF-8, as base64 otherwise', () => {
  assert.deepEqual(describeBody(Buffer.from('{"t":"é"}')), { body: '{"t":"é"}', bodyEncoding: 'utf8' });
  assert.deepEqual(describeBody(Buffer.from([0xff, 0x00, 0x80])), { body: '/wCA', bodyEncoding: 'base64' });
});
