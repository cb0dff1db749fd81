/**
 * The console's access check against every route that serves data, each
 * spelled the ways a router may read as that route: percent-encoded, in
 * another case, with dot segments, doubled slashes. Requests go out as
 * written (undici's Pool sends the path raw; a WHATWG URL would resolve dot
 * segments first). A refusal is 403 or 401 from the check, or the router's
 * own 404 when no route matched; never the route's answer. Real storage
 * behind the console shows that nothing was created or deleted.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Agent as HttpsAgent } from 'node:https';
import { readFile } from 'node:fs/promises';
import { BlobServiceClient, type StoragePipelineOptions } from '@azure/storage-blob';
import { Pool } from 'undici';
import type { RunningComponent } from '../../src/common/component.ts';
import { startConsole } from '../../src/console/server.ts';
import { startStorage } from '../../src/storage/server.ts';
import { quiet, tempDataDir } from '../helpers/index.ts';

const HUB_KEY = Buffer.from('hub key the console must not hand out').toString('base64');
const SCORING_KEY = 'scoring-key-the-console-must-not-hand-out';

/** Every route of the console that serves data, one call each (the forwarded components by their prefix). */
const DATA_ROUTES: [method: string, path: string][] = [
  ['GET', '/api/overview'],
  ['GET', '/api/scoring/labels'],
  ['GET', '/api/ca.crt'],
  ['GET', '/api/storage/containers'],
  ['PUT', '/api/storage/containers/intruded'],
  ['DELETE', '/api/storage/containers/victim'],
  ['GET', '/api/storage/containers/victim/blobs'],
  ['GET', '/api/storage/containers/victim/blob?name=kept.txt'],
  ['PUT', '/api/storage/containers/victim/blob?name=kept.txt'],
  ['DELETE', '/api/storage/containers/victim/blob?name=kept.txt'],
  ['GET', '/api/storage/containers/victim/properties?name=kept.txt'],
  ['GET', '/api/identity/directory'],
  ['POST', '/api/identity/decode'],
  ['POST', '/api/identity/token'],
  ['GET', '/api/devices'],
  ['PUT', '/api/devices/sensor-1/active'],
  ['GET', '/api/devsvc/replicas'],
  ['GET', '/api/devsvc/devices/sensor-1'],
  ['GET', '/api/hub/devices'],
  ['DELETE', '/api/hub/devices/demo-device'],
  ['GET', '/api/gateway/services'],
  ['GET', '/api/scripts/'],
  ['POST', '/api/sentiment/text/analytics/v2.0/sentiment'],
  ['POST', '/api/face/face/v1.0/detect'],
  ['GET', '/api/billing/billing/v1/usage'],
  ['GET', '/api/devdata/data/sensor-1'],
  ['POST', '/api/scoring/'],
];

const encode = (c: string, upper: boolean) => `%${c.charCodeAt(0).toString(16)[upper ? 'toUpperCase' : 'toLowerCase']()}`;

/** `path` as written, and each other spelling of its first two segments a router might take for it. */
function spellings(path: string): string[] {
  const [, first, second = '', ...rest] = path.split('/') as [string, string, string?, ...string[]];
  const tail = rest.length ? `/${rest.join('/')}` : '';
  const at = (one: string, two = second) => `/${one}/${two}${tail}`;
  const out = new Set([path]);
  // Percent-encoding: each letter of the prefix alone, all of it, the next segment's first letter in both hex cases.
  for (let i = 0; i < first.length; i++) out.add(at(first.slice(0, i) + encode(first[i]!, false) + first.slice(i + 1)));
  out.add(at([...first].map((c) => encode(c, false)).join('')));
  if (second) {
    out.add(at(first, encode(second[0]!, false) + second.slice(1)));
    out.add(at(first, encode(second[0]!, true) + second.slice(1)));
    out.add(at([...first].map((c) => encode(c, true)).join(''), [...second].map((c) => encode(c, true)).join('')));
  }
  out.add(`/%25${first.charCodeAt(0).toString(16)}${first.slice(1)}/${second}${tail}`);
  // Case.
  out.add(at(first.toUpperCase()));
  out.add(at(first[0]!.toUpperCase() + first.slice(1)));
  if (second) out.add(at(first, second.toUpperCase()));
  // Dot segments, plain and encoded.
  out.add(`/.${path}`);
  out.add(`/x/..${path}`);
  out.add(`/%2e${path}`);
  out.add(`/x/%2e%2e${path}`);
  out.add(`/x/%2E%2E${path}`);
  out.add(at(first, `./${second}`));
  out.add(at(first, `x/../${second}`));
  out.add(at(first, `%2e/${second}`));
  out.add(at(first, `x/%2E%2E/${second}`));
  // Slashes and separators.
  out.add(`/${path}`);
  out.add(at(first, `/${second}`));
  out.add(`${path}/`);
  out.add(at(`${first};x`));
  out.add(`/${first}%2f${second}${tail}`);
  out.add(`/${first}%5c${second}${tail}`);
  return [...out];
}

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  code: string | undefined;
  text: string;
}

const cleanups: (() => unknown)[] = [];
let storage: RunningComponent;
let onLoopback: RunningComponent;
let offLoopback: RunningComponent;
let blobs: BlobServiceClient;
let secrets: string[];

before(async () => {
  const dataDir = await tempDataDir({ after: (fn) => cleanups.push(fn) });
  storage = await startStorage({ ...quiet, dataDir, httpsPort: 0 });
  cleanups.push(() => storage.close());
  const { connectionString, accountKey } = storage.facts!.storage!;
  blobs = BlobServiceClient.fromConnectionString(connectionString, {
    agent: new HttpsAgent({ ca: await readFile(storage.caCertPath!, 'utf8') }),
  } as StoragePipelineOptions);
  await blobs.getContainerClient('victim').create();
  await blobs.getContainerClient('victim').getBlockBlobClient('kept.txt').upload('kept', 4);
  const options = {
    ...quiet,
    dataDir,
    storageConnectionString: connectionString,
    hubUrl: 'https://127.0.0.1:1',
    hubConnectionString: `HostName=localhost;SharedAccessKeyName=iothubowner;SharedAccessKey=${HUB_KEY}`,
    scoringUrl: 'http://127.0.0.1:1/score',
    scoringKey: SCORING_KEY,
  };
  secrets = [accountKey, HUB_KEY, SCORING_KEY];
  onLoopback = await startConsole(options);
  cleanups.push(() => onLoopback.close());
  // 127.0.0.2 is this machine, but not an address the console trusts without a login.
  offLoopback = await startConsole({ ...options, host: '127.0.0.2' });
  cleanups.push(() => offLoopback.close());
});
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

async function send(console: RunningComponent, method: string, path: string, headers: Record<string, string>): Promise<Answer> {
  const pool = new Pool(console.urls[0]!.url.replace(/\/$/, ''));
  try {
    const withBody = method !== 'GET' && method !== 'DELETE';
    const answer = await pool.request({
      method: method as 'GET',
      path,
      headers: { ...(withBody ? { 'content-type': 'application/json' } : {}), ...headers },
      body: withBody ? '{}' : null,
    });
    const text = await answer.body.text();
    let code: string | undefined;
    try {
      code = (JSON.parse(text) as { error?: { code?: string } }).error?.code;
    } catch {
      code = undefined;
    }
    return { status: answer.statusCode, headers: answer.headers, code, text };
  } finally {
    await pool.close();
  }
}

/** The check's refusal, or the router's 404 for a path no route matched: nothing the route would have answered. */
function assertRefused(answer: Answer, what: string): void {
  assert.ok(
    (answer.status === 403 && answer.code === 'ForeignRequest') ||
      (answer.status === 401 && answer.code === 'LoginRequired') ||
      (answer.status === 404 && answer.code === 'NotFound'),
    `${what} answered ${answer.status} ${answer.text.slice(0, 200)}`,
  );
  for (const secret of secrets) assert.ok(!answer.text.includes(secret), `${what} handed out a secret`);
  assert.equal(answer.headers['access-control-allow-origin'], undefined, `${what} granted CORS`);
}

async function assertStorageUntouched(): Promise<void> {
  const names: string[] = [];
  for await (const c of blobs.listContainers()) names.push(c.name);
  assert.deepEqual(names, ['victim']);
  assert.equal((await blobs.getContainerClient('victim').getBlobClient('kept.txt').downloadToBuffer()).toString(), 'kept');
}

test('the router decodes a percent-encoded route prefix, so the spellings below reach the data routes', async () => {
  const answer = await send(onLoopback, 'GET', '/%61%70%69/%6Fverview', {});
  assert.equal(answer.status, 200);
  assert.ok(answer.text.includes(HUB_KEY), 'the overview hands the keys to the console page');
});

test('on loopback, a request naming another host is refused on every data route, however its path is spelled', async () => {
  for (const [method, path] of DATA_ROUTES)
    for (const spelled of spellings(path)) {
      assertRefused(await send(onLoopback, method, spelled, { host: 'evil.example', 'x-offcloud-console': '1' }), `${method} ${spelled}`);
    }
  await assertStorageUntouched();
});

test('a request marked Sec-Fetch-Site: cross-site is refused on every data route, however its path is spelled', async () => {
  for (const [method, path] of DATA_ROUTES)
    for (const spelled of spellings(path)) {
      assertRefused(await send(onLoopback, method, spelled, { 'sec-fetch-site': 'cross-site', 'x-offcloud-console': '1' }), `${method} ${spelled}`);
    }
  await assertStorageUntouched();
});

test("a call that changes something without the console's header is refused on every data route, however its path is spelled", async () => {
  for (const [method, path] of DATA_ROUTES.filter(([m]) => m !== 'GET'))
    for (const spelled of spellings(path)) assertRefused(await send(onLoopback, method, spelled, {}), `${method} ${spelled}`);
  await assertStorageUntouched();
});

test('off loopback, a request without a session is refused on every data route, however its path is spelled', async () => {
  for (const [method, path] of DATA_ROUTES)
    for (const spelled of spellings(path)) {
      assertRefused(await send(offLoopback, method, spelled, { 'x-offcloud-console': '1' }), `${method} ${spelled}`);
    }
  await assertStorageUntouched();
});

test('the page, its files, the probes, the session state and the login need no session; the login still refuses other sites', async () => {
  for (const path of ['/', '/assets/app.js', '/health', '/ready', '/api/session']) {
    assert.equal((await send(offLoopback, 'GET', path, {})).status, 200, path);
  }
  assert.equal((await send(offLoopback, 'POST', '/api/login', { 'x-offcloud-console': '1' })).status, 401);
  assertRefused(await send(offLoopback, 'POST', '/%61pi/login', { 'sec-fetch-site': 'cross-site', 'x-offcloud-console': '1' }), 'cross-site login');
  assertRefused(await send(onLoopback, 'GET', '/%61pi/session', { host: 'evil.example' }), 'session state to another host');
  const preflight = await send(onLoopback, 'OPTIONS', '/api/storage/containers/intruded', {
    origin: 'https://evil.example',
    'access-control-request-method': 'PUT',
    'access-control-request-headers': 'x-offcloud-console',
  });
  assert.equal(preflight.headers['access-control-allow-origin'], undefined, 'a CORS preflight is never granted');
});
