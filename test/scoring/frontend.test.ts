import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createServer } from 'node:net';
import { Agent, Pool, request } from 'undici';
import { startScoring } from '../../src/scoring/server.ts';
import { startScoringFrontend } from '../../src/scoring/frontend-server.ts';
import { manageKeys } from '../../src/scoring/commands.ts';
import { scoringFrontend } from '../../src/scoring/index.ts';
import type { RunningComponent } from '../../src/common/component.ts';
import { DEBIAN_PYTHON, debianProgram, quiet, tempDataDir } from '../helpers/index.ts';
import { imageToPixels } from '../../src/scoring/client.ts';
import { argmax, honeycombSvg, pictureBody, runCli } from './fixtures.ts';
import { mergeFacts } from '../../src/common/facts.ts';

const HONEYCOMB = 599;
const SCORE_CLIENT = new URL('./score_client.py', import.meta.url).pathname;
const run = promisify(execFile);

let scoring: RunningComponent;
let frontend: RunningComponent;
let scoringBase: string;
let frontendBase: string;
let client: Pool;
let dataDir: string;
let honeycomb: string;

/** A port nothing listens on: bound, then released. */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function keyOf(running: RunningComponent, service: string, which: 'primary' | 'secondary'): string {
  const keys = running.facts!['scoring-frontend']!.services[service]!;
  return which === 'primary' ? keys.primaryKey : keys.secondaryKey;
}

/** Run at the very end (the suite-level after), not when the before hook ends. */
const cleanups: (() => unknown)[] = [];

before(async () => {
  dataDir = await tempDataDir({ after: (fn: () => unknown) => cleanups.push(fn) });
  scoring = await startScoring({ ...quiet, dataDir });
  scoringBase = scoring.facts!.scoring!.url;
  const dead = `127.0.0.1:${await deadPort()}`;
  frontend = await startScoringFrontend({
    ...quiet,
    dataDir,
    healthIntervalMs: 200,
    maxBodyBytes: 4 * 1024 * 1024,
    services: [`imagenet=${scoringBase}`, `two=${dead}+${scoringBase}`, `down=${dead}`],
  });
  frontendBase = frontend.facts!['scoring-frontend']!.url;
  client = new Pool(frontendBase, { connections: 4 });
  honeycomb = await pictureBody(honeycombSvg());
});
after(async () => {
  await client.close();
  await frontend.close();
  await scoring.close();
  await Promise.all(cleanups.map((fn) => fn()));
});

async function score(service: string, authorization: string | undefined, body: string | Buffer = honeycomb, path = `/api/v1/service/${service}/score`) {
  const response = await client.request({
    path,
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...(authorization === undefined ? {} : { authorization }) },
  });
  const text = await response.body.text();
  return {
    status: response.statusCode,
    headers: response.headers,
    text,
    json: () => JSON.parse(text) as { result: number[]; time: number; error?: { code: string; message: string } },
  };
}

function assertError(r: { status: number; text: string }, status: number, message?: RegExp): void {
  assert.equal(r.status, status, r.text);
  const body = JSON.parse(r.text) as { error: { code: string; message: string } };
  assert.equal(typeof body.error.code, 'string');
  if (message) assert.match(body.error.message, message);
}

test('R-SCORE-8 R-SCORE-11 the front-end forwards to the container and returns its result unchanged', async () => {
  const direct = (await request(`${scoringBase}/score`, { method: 'POST', body: honeycomb })).body.json() as Promise<{ result: number[] }>;
  const through = await score('imagenet', `bearer ${keyOf(frontend, 'imagenet', 'primary')}`);
  assert.equal(through.status, 200, through.text);
  assert.match(String(through.headers['content-type']), /^application\/json/);
  const answer = through.json();
  assert.deepEqual(answer.result, (await direct).result);
  assert.equal(argmax(answer.result), HONEYCOMB);
  assert.ok(answer.time > 0);
});

test("R-SCORE-8 the container's own errors come back unchanged (400 for a wrong shape)", async () => {
  const r = await score('imagenet', `bearer ${keyOf(frontend, 'imagenet', 'primary')}`, '{"data": [[[[1]]]]}');
  assertError(r, 400, /data\[0\]\[0\]\[0\] has 1 entries; expected 224/);
});

test('R-SCORE-9 primary and secondary keys both work; the scheme word is case-insensitive', async () => {
  for (const which of ['primary', 'secondary'] as const) {
    for (const scheme of ['bearer', 'Bearer', 'BEARER']) {
      const r = await score('imagenet', `${scheme} ${keyOf(frontend, 'imagenet', which)}`);
      assert.equal(r.status, 200, `${scheme} ${which}: ${r.text}`);
    }
  }
});

test('R-SCORE-9 a missing, wrong or foreign key gets 401 JSON with WWW-Authenticate', async () => {
  const primary = keyOf(frontend, 'imagenet', 'primary');
  for (const authorization of [
    undefined,
    '',
    'bearer',
    `bearer ${primary}x`,
    `bearer ${primary.slice(1)}`,
    `Basic ${primary}`,
    `bearer ${keyOf(frontend, 'two', 'primary')}`,
    `bearer ${primary} extra`,
    `bearer\u00a0${primary}`,
  ]) {
    const r = await score('imagenet', authorization);
    assertError(r, 401);
    assert.equal(r.headers['www-authenticate'], 'Bearer', String(authorization));
  }
});

test('R-SCORE-8 an unknown service is 404 JSON, also with path tricks', async () => {
  const key = `bearer ${keyOf(frontend, 'imagenet', 'primary')}`;
  assertError(await score('nosuch', key), 404, /no service "nosuch"/);
  for (const path of [
    '/api/v1/service/%2e%2e/score',
    '/api/v1/service/imagenet/score/x',
    '/api/v1/service/../imagenet/score',
    '/api/v2/service/imagenet/score',
    '/api/v1/service//score',
  ]) {
    assertError(await score('', key, honeycomb, path), 404);
  }
});

test('R-SCORE-10 keys regenerated with the CLI take effect at once, without a restart', async () => {
  const oldPrimary = keyOf(frontend, 'imagenet', 'primary');
  const secondary = keyOf(frontend, 'imagenet', 'secondary');
  const shown: string[] = [];
  await manageKeys(['show', 'imagenet', '--data-dir', dataDir, '--json'], (line) => shown.push(line));
  assert.deepEqual(JSON.parse(shown.join('')), { primaryKey: oldPrimary, secondaryKey: secondary });
  await assert.rejects(
    manageKeys(['show', 'nosuch', '--data-dir', dataDir], () => undefined),
    /no keys for service "nosuch"/,
  );
  await assert.rejects(
    manageKeys(['regenerate', 'imagenet', '--data-dir', dataDir], () => undefined),
    /exactly one of --primary or --secondary/,
  );
  // The real binary, a separate process, changes the key the running front-end uses.
  const regenerated = await runCli(['scoring', 'keys', 'regenerate', 'imagenet', '--primary', '--data-dir', dataDir, '--json']);
  assert.equal(regenerated.code, 0, regenerated.stderr);
  const keys = JSON.parse(regenerated.stdout) as { primaryKey: string; secondaryKey: string };
  assert.notEqual(keys.primaryKey, oldPrimary);
  assert.equal(keys.secondaryKey, secondary);
  assertError(await score('imagenet', `bearer ${oldPrimary}`), 401);
  assert.equal((await score('imagenet', `bearer ${keys.primaryKey}`)).status, 200);
  assert.equal((await score('imagenet', `bearer ${secondary}`)).status, 200);
});

test('R-SCORE-10 the admin endpoint regenerates the secondary key; the primary stays', async () => {
  const admin = `bearer ${frontend.facts!['scoring-frontend']!.adminKey}`;
  const before = (await (await request(`${frontendBase}/admin/v1/service/imagenet/keys`, { headers: { authorization: admin } })).body.json()) as {
    primaryKey: string;
    secondaryKey: string;
  };
  const response = await request(`${frontendBase}/admin/v1/service/imagenet/regenerateKeys`, {
    method: 'POST',
    headers: { authorization: admin, 'content-type': 'application/json' },
    body: '{"keyType": "Secondary"}',
  });
  assert.equal(response.statusCode, 200);
  const after = (await response.body.json()) as { primaryKey: string; secondaryKey: string };
  assert.equal(after.primaryKey, before.primaryKey);
  assert.notEqual(after.secondaryKey, before.secondaryKey);
  assertError(await score('imagenet', `bearer ${before.secondaryKey}`), 401);
  assert.equal((await score('imagenet', `bearer ${after.secondaryKey}`)).status, 200);
  assert.equal((await score('imagenet', `bearer ${after.primaryKey}`)).status, 200);
});

test('R-SCORE-10 the admin endpoints refuse a service key, and a bad keyType is 400', async () => {
  const serviceKey = `bearer ${keyOf(frontend, 'two', 'primary')}`;
  const refused = await request(`${frontendBase}/admin/v1/service/two/regenerateKeys`, {
    method: 'POST',
    headers: { authorization: serviceKey },
    body: '{"keyType":"Primary"}',
  });
  assertError({ status: refused.statusCode, text: await refused.body.text() }, 401);
  const admin = `bearer ${frontend.facts!['scoring-frontend']!.adminKey}`;
  for (const body of ['{"keyType":"Tertiary"}', 'not json', '{"keyType": 1}', '']) {
    const bad = await request(`${frontendBase}/admin/v1/service/two/regenerateKeys`, {
      method: 'POST',
      headers: { authorization: admin, 'content-type': 'application/json' },
      body,
    });
    assertError({ status: bad.statusCode, text: await bad.body.text() }, 400);
  }
  assert.equal((await score('two', serviceKey)).status, 200, 'the service key still works');
});

test('R-SCORE-11 a service whose first replica is down is served by the healthy one', async () => {
  const key = `bearer ${keyOf(frontend, 'two', 'secondary')}`;
  for (let i = 0; i < 4; i++) {
    const r = await score('two', key);
    assert.equal(r.status, 200, r.text);
    assert.equal(argmax(r.json().result), HONEYCOMB);
  }
});

test('R-SCORE-11 a service with no live replica answers 502 JSON, and the front-end keeps serving', async () => {
  const r = await score('down', `bearer ${keyOf(frontend, 'down', 'primary')}`);
  assertError(r, 502, /no scoring replica of service "down" answered/);
  // (imagenet's keys were regenerated above; service "two" still has its first ones)
  assert.equal((await score('two', `bearer ${keyOf(frontend, 'two', 'primary')}`)).status, 200);
  const ready = await request(`${frontendBase}/ready`);
  assert.equal(ready.statusCode, 200);
  await ready.body.dump();
});

test('R-SCORE-8 bodies over the limit get 413 JSON; other methods 405', async () => {
  assertError(
    await score('two', `bearer ${keyOf(frontend, 'two', 'secondary')}`, Buffer.alloc(5 * 1024 * 1024, 0x20)),
    413,
    /^the body is larger than 4194304 bytes \(--max-body-bytes\)$/,
  );
  const get = await request(`${frontendBase}/api/v1/service/imagenet/score`);
  assertError({ status: get.statusCode, text: await get.body.text() }, 405);
});

test('R-SCORE-12 TLS is optional: over HTTPS with a client trusting the local CA (undici and curl)', async (t) => {
  const tls = await startScoringFrontend({ ...quiet, dataDir, tls: true, services: [`imagenet=${scoringBase}`] });
  t.after(() => tls.close());
  const url = tls.urls[0]!.url;
  assert.match(url, /^https:\/\//);
  assert.ok(tls.caCertPath);
  const key = keyOf(tls, 'imagenet', 'primary');
  const agent = new Agent({ connect: { ca: await readFile(tls.caCertPath!, 'utf8') } });
  t.after(() => agent.close());
  const response = await request(url.replace('127.0.0.1', 'localhost'), {
    method: 'POST',
    body: honeycomb,
    dispatcher: agent,
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(response.statusCode, 200);
  assert.equal(argmax(((await response.body.json()) as { result: number[] }).result), HONEYCOMB);
  await assert.rejects(request(url, { method: 'POST', body: honeycomb, headers: { authorization: `bearer ${key}` } }), /certificate/);
  const curl = debianProgram('curl', '/usr/bin/curl');
  const viaCurl = await new Promise<string>((resolve, reject) => {
    const child = execFile(
      curl,
      ['-sS', '--cacert', tls.caCertPath!, '-H', `Authorization: bearer ${key}`, '-H', 'Content-Type: application/json', '--data-binary', '@-', url],
      { maxBuffer: 1 << 22 },
      (err, out) => (err ? reject(err) : resolve(out)),
    );
    child.stdin!.end(honeycomb);
  });
  assert.equal(argmax((JSON.parse(viaCurl) as { result: number[] }).result), HONEYCOMB);
});

test('R-SCORE-11 under offcloud up the front-end is wired to the scoring container started before it', () => {
  assert.deepEqual(scoringFrontend.wireUp!(mergeFacts([scoring]), new Map([['scoring', scoring]])), { services: [`imagenet=${scoringBase}`] });
  assert.deepEqual(scoringFrontend.wireUp!({}, new Map()), {});
});

test('R-SCORE-8 R-SCORE-5 a Python requests client sends integers and 17-digit floats through the front-end', async () => {
  const python = debianProgram('python3-requests', DEBIAN_PYTHON);
  const pixelsFile = join(dataDir, 'pixels.bin');
  await writeFile(pixelsFile, await imageToPixels(honeycombSvg()));
  const key = keyOf(frontend, 'two', 'secondary');
  const url = `${frontendBase}/api/v1/service/two/score`;
  for (const form of ['integers', 'floats']) {
    const { stdout } = await run(python, [SCORE_CLIENT, url, key, pixelsFile, form]);
    const [top, count, time] = stdout.trim().split(' ');
    assert.equal(Number(top), HONEYCOMB, `${form}: ${stdout}`);
    assert.equal(Number(count), 1000);
    assert.ok(Number(time) > 0);
  }
});

test('R-SCORE-11 a front-end whose every replica is down is not ready (503) but answers with JSON errors', async () => {
  const lonely = await startScoringFrontend({ ...quiet, dataDir, services: [`down=127.0.0.1:${await deadPort()}`] });
  try {
    const base = lonely.facts!['scoring-frontend']!.url;
    const ready = await request(`${base}/ready`);
    assert.equal(ready.statusCode, 503);
    await ready.body.dump();
    const key = keyOf(lonely, 'down', 'primary');
    const r = await request(`${base}/api/v1/service/down/score`, { method: 'POST', body: honeycomb, headers: { authorization: `bearer ${key}` } });
    assertError({ status: r.statusCode, text: await r.body.text() }, 502);
  } finally {
    await lonely.close();
  }
});

test('R-SCORE-9 a keys file damaged while running refuses requests (503 JSON) until it is repaired', async (t) => {
  const own = await tempDataDir(t);
  const guarded = await startScoringFrontend({ ...quiet, dataDir: own, services: [`imagenet=${scoringBase}`] });
  t.after(() => guarded.close());
  const base = guarded.facts!['scoring-frontend']!.url;
  const key = keyOf(guarded, 'imagenet', 'primary');
  const file = join(own, 'scoring-frontend', 'keys.json');
  const good = await readFile(file);
  const call = async () => {
    const r = await request(`${base}/api/v1/service/imagenet/score`, { method: 'POST', body: honeycomb, headers: { authorization: `bearer ${key}` } });
    return { status: r.statusCode, text: await r.body.text() };
  };
  await writeFile(file, '{"adminKey": ');
  assertError(await call(), 503, /cannot read its keys/);
  await writeFile(file, good);
  assert.equal((await call()).status, 200);
});
