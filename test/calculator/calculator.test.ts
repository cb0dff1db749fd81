import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startCalculator } from '../../src/calculator/server.ts';
import { MAX_DIGITS } from '../../src/calculator/add.ts';
import type { RunningComponent } from '../../src/common/component.ts';
import { quiet, readMetric } from '../helpers/index.ts';

let calculator: RunningComponent;
let base: string;

before(async () => {
  calculator = await startCalculator(quiet);
  base = calculator.urls[0]!.url.replace('/add/{a}/{b}', '');
});
after(() => calculator.close());

async function get(path: string, method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'HEAD' = 'GET') {
  const response = await request(base + path, { method });
  return { status: response.statusCode, headers: response.headers, body: await response.body.text() };
}

test('R-CALC-1 GET /add/2/3 returns 5 as plain text', async () => {
  const r = await get('/add/2/3');
  assert.equal(r.status, 200);
  assert.match(String(r.headers['content-type']), /^text\/plain/);
  assert.equal(r.body, '5');
});

test('R-CALC-1 negative numbers and explicit signs', async () => {
  assert.equal((await get('/add/-7/3')).body, '-4');
  assert.equal((await get('/add/+7/-10')).body, '-3');
  assert.equal((await get('/add/-0/0')).body, '0');
  assert.equal((await get('/add/%2D5/2')).body, '-3');
});

test('R-CALC-1 40-digit integers are added exactly', async () => {
  const a = '1234567890123456789012345678901234567890';
  const b = '9876543210987654321098765432109876543210';
  const r = await get(`/add/${a}/${b}`);
  assert.equal(r.status, 200);
  assert.equal(r.body, (BigInt(a) + BigInt(b)).toString());
  assert.equal(r.body, '11111111101111111110111111111011111111100');
});

test('R-CALC-1 integers up to the documented digit limit are accepted', async () => {
  const a = '9'.repeat(MAX_DIGITS);
  const r = await get(`/add/${a}/1`);
  assert.equal(r.status, 200);
  assert.equal(r.body, '1' + '0'.repeat(MAX_DIGITS));
});

for (const [label, a, b, named] of [
  ['a decimal', '1.5', '2', '1.5'],
  ['letters', 'abc', '2', 'abc'],
  ['hexadecimal', '0x10', '2', '0x10'],
  ['an exponent', '1e3', '2', '1e3'],
  ['a lone sign', '-', '2', '-'],
  ['spaces', '1%20', '2', '1 '],
  ['an empty segment', '', '2', '""'],
  ['the second segment bad', '2', 'x', 'x'],
] as const) {
  test(`R-CALC-1 rejects ${label} with 400 naming the segment`, async () => {
    const r = await get(`/add/${a}/${b}`);
    assert.equal(r.status, 400);
    assert.match(String(r.headers['content-type']), /^text\/plain/);
    assert.ok(r.body.includes(named), `"${r.body}" should name ${named}`);
  });
}

test('R-CALC-1 too many digits → 400 naming the limit', async () => {
  const r = await get(`/add/${'1'.repeat(MAX_DIGITS + 1)}/1`);
  assert.equal(r.status, 400);
  assert.match(r.body, new RegExp(`more than ${MAX_DIGITS} digits`));
});

test('R-CALC-1 other paths → 404, other methods on /add → 405 with Allow: GET', async () => {
  for (const path of ['/', '/add', '/add/1', '/add/1/2/3', '/sub/1/2', '/add/1/2/']) {
    assert.equal((await get(path)).status, 404, path);
  }
  for (const method of ['POST', 'PUT', 'DELETE', 'HEAD'] as const) {
    const r = await get('/add/1/2', method);
    assert.equal(r.status, 405, method);
    assert.equal(r.headers.allow, 'GET');
  }
});

test('R-CALC-1 fuzz: broken encodings, path tricks and huge URLs get clean errors; the server keeps serving', async () => {
  const cases: [string, number][] = [
    ['/add/%E0%A4%A/1', 400],
    ['/add/%/1', 400],
    ['/add/%00/1', 400],
    ['/add/..%2F..%2Fetc/1', 400],
    ['/add/1/2?x=' + 'a'.repeat(5000), 200],
    [`/add/${'9'.repeat(10000)}/1`, 400],
    // Past Node's 16 KiB header limit the server answers 431 before routing.
    [`/add/${'9'.repeat(20000)}/1`, 431],
  ];
  for (const [path, status] of cases) {
    const r = await get(path);
    assert.equal(r.status, status, path.slice(0, 40));
    assert.ok(r.body.length < 2000, 'error bodies stay short');
    if (status === 400) assert.match(String(r.headers['content-type']), /^text\/plain/, path.slice(0, 40));
  }
  const results = await Promise.all(Array.from({ length: 50 }, (_, i) => get(`/add/${i}/${i}`)));
  results.forEach((r, i) => assert.equal(r.body, String(2 * i)));
});

test('GET /health and /ready answer', async () => {
  assert.deepEqual(JSON.parse((await get('/health')).body), { status: 'ok' });
  assert.equal((await get('/ready')).status, 200);
});

test('metrics: GET /metrics counts requests by route and status and shows open connections', async () => {
  const ok = { method: 'GET', route: '/add/*', status: '200', component: 'calculator' };
  const bad = { ...ok, status: '400' };
  const before = {
    ok: (await readMetric(base, 'offcloud_http_requests_total', ok)) ?? 0,
    bad: (await readMetric(base, 'offcloud_http_requests_total', bad)) ?? 0,
  };
  for (let i = 0; i < 3; i++) assert.equal((await request(`${base}/add/${i}/1`)).statusCode, 200);
  assert.equal((await request(`${base}/add/x/1`)).statusCode, 400);
  assert.equal(await readMetric(base, 'offcloud_http_requests_total', ok), before.ok + 3);
  assert.equal(await readMetric(base, 'offcloud_http_requests_total', bad), before.bad + 1);
  // A URL of its own is counted under its route's pattern, never as a label of its own.
  assert.equal(await readMetric(base, 'offcloud_http_requests_total', { route: '/add/0/1' }), undefined);
  assert.ok(((await readMetric(base, 'offcloud_http_request_duration_seconds_count', { route: '/add/*' })) ?? 0) >= 4);
  assert.ok(((await readMetric(base, 'offcloud_open_connections')) ?? 0) >= 1);
  assert.ok(((await readMetric(base, 'offcloud_process_resident_memory_bytes')) ?? 0) > 1e6);
});
