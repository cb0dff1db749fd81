/**
 * Per-client limits and vanishing clients on one `offcloud up` (one start for the whole file):
 * first each listed limit, gone just over while a well-behaved client of the
 * same listener keeps being served; then a burst of clients that vanish
 * mid-request on every listener of every component (keep-alive HTTP, bodies
 * and headers cut short, SSE streams of running scripts, MQTT and gRPC
 * connections left half-way, cancelled gRPC calls), then SIGTERM: the process
 * must exit 0 within 5 s with no process of its children's groups left.
 *
 * The limits are the ones each component's docs page lists under "Limits".
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { Agent, request } from 'undici';
import { TOKEN_BODY_LIMIT } from '../../src/identity/issuer-server.ts';
import { MAX_IMAGE_BYTES } from '../../src/face/detect.ts';
import { MAX_MESSAGE_BYTES } from '../../src/devices/devsvc-server.ts';
import { devSvcClient } from '../../src/devices/proto.ts';
import { scoringOptions } from '../../src/scoring/options.ts';
import { scriptsOptions } from '../../src/scripts/options.ts';
import { sentimentOptions } from '../../src/sentiment/options.ts';
import { tempDataDir } from '../helpers/index.ts';
import { eventually, writeScript } from '../scripts/helpers.ts';
import {
  descendants,
  groupOf,
  liveMembers,
  oversizedRequest,
  startUp,
  terminate,
  vanishingClient,
  vanishingHttp,
  type Listener,
  type Up,
  type Vanishing,
} from './harness.ts';

/** Node's default largest request head (`--max-http-header-size`), which every HTTP listener keeps. */
const MAX_HEADER_BYTES = 16 * 1024;

const dataDir = await tempDataDir({ after });
const scriptsFolder = join(dataDir, 'scripts');
const pidsFile = join(dataDir, 'run-pids');
// A folder that exists is served as it is: a script that outlives SIGTERM (and leaves a grandchild that does too).
await writeScript(scriptsFolder, 'stubborn.sh', `#!/bin/sh\ntrap '' TERM\necho $$ >> ${pidsFile}\nsleep 60 &\necho started\nwait\n`);
await writeScript(scriptsFolder, 'hello.sh', '#!/bin/sh\necho hello\n');

let up: Up;
let agent: Agent;
before(async () => {
  up = await startUp(dataDir);
  agent = new Agent({ connect: { ca: await readFile(join(dataDir, 'ca', 'ca.crt'), 'utf8') } });
});
after(async () => {
  up?.process.kill('SIGKILL');
  // Should the shutdown test fail, the scripts it left go too.
  const groups = new Set((await readFile(pidsFile, 'utf8').catch(() => '')).split('\n').filter(Boolean).map(Number));
  for (const member of liveMembers(groups)) process.kill(member.pid, 'SIGKILL');
  await agent?.close();
});

const origin = (listener: Listener) => `${listener.url.protocol}//${listener.url.host}`;

/** A request that must be answered as usual while another client goes over a limit. */
async function wellBehaved(listener: Listener): Promise<void> {
  const answer = await request(`${origin(listener)}/health`, { dispatcher: agent });
  await answer.body.dump();
  assert.equal(answer.statusCode, 200, `${listener.component} ${listener.label}: /health while a client is over a limit`);
}

interface BodyLimit {
  component: string;
  label?: RegExp;
  path: string;
  limit: number;
  contentType: string;
  /** The interface's own answer: 413, or the real service's 400 where it answers that. */
  status: number;
  body: RegExp;
}

const BODY_LIMITS: BodyLimit[] = [
  { component: 'calculator', path: '/add/1/2', limit: 16 * 1024, contentType: 'application/json', status: 413, body: /large/i },
  {
    component: 'identity',
    label: /^token endpoint v2/,
    path: '',
    limit: TOKEN_BODY_LIMIT,
    contentType: 'application/x-www-form-urlencoded',
    status: 400,
    body: /invalid_request/,
  },
  { component: 'billing', path: '/billing/v1/usage', limit: 64 * 1024, contentType: 'application/json', status: 413, body: /large/i },
  {
    component: 'sentiment',
    path: '/text/analytics/v2.0/sentiment',
    limit: sentimentOptions.maxRequestBytes.default,
    contentType: 'application/json',
    status: 400,
    body: /too large/,
  },
  { component: 'face', path: '/face/v1.0/detect', limit: MAX_IMAGE_BYTES, contentType: 'application/octet-stream', status: 400, body: /size|large/i },
  { component: 'face', path: '/face/v1.0/detect', limit: 64 * 1024, contentType: 'application/json', status: 400, body: /too large/ },
  {
    component: 'scoring',
    label: /^POST \/score/,
    path: '/score',
    limit: scoringOptions.maxBodyBytes.default,
    contentType: 'application/octet-stream',
    status: 413,
    body: /large/i,
  },
  { component: 'scoring-frontend', path: '', limit: scoringOptions.maxBodyBytes.default, contentType: 'application/json', status: 413, body: /large/i },
  { component: 'scripts', path: '/hello', limit: scriptsOptions.bodyLimit.default, contentType: 'application/octet-stream', status: 413, body: /BodyTooLarge/ },
];

for (const limit of BODY_LIMITS) {
  test(`resilience: ${limit.component} refuses a ${limit.contentType} body 1 byte over ${limit.limit} bytes (${limit.status}) and keeps serving`, async () => {
    const listener = up.listener(limit.component, limit.label);
    const url = limit.path ? `${origin(listener)}${limit.path}` : listener.url.href;
    const [refused] = await Promise.all([oversizedRequest(new URL(url), limit.contentType, limit.limit + 1), wellBehaved(listener)]);
    assert.equal(refused.status, limit.status, refused.body);
    assert.match(refused.body, limit.body);
    await wellBehaved(listener);
  });
}

const HEADER_LIMITED = ['calculator', 'devdata', 'identity', 'billing', 'sentiment', 'face', 'scoring', 'scoring-frontend', 'scripts'];

test(`resilience: every HTTP listener of ${HEADER_LIMITED.join(', ')} refuses a request head just over ${MAX_HEADER_BYTES} bytes with 431`, async () => {
  const listeners = up.listeners.filter((l) => HEADER_LIMITED.includes(l.component) && l.url.protocol.startsWith('http'));
  const origins = [...new Map(listeners.map((l) => [origin(l), l])).values()];
  assert.ok(origins.length >= HEADER_LIMITED.length, `listeners found: ${origins.map(origin).join(' ')}`);
  for (const listener of origins) {
    const over = async () => {
      const answer = await request(`${origin(listener)}/health`, { dispatcher: agent, headers: { 'x-padding': 'p'.repeat(MAX_HEADER_BYTES) } });
      await answer.body.dump();
      return answer.statusCode;
    };
    const [code] = await Promise.all([over(), wellBehaved(listener)]);
    assert.equal(code, 431, `${listener.component} ${listener.label}`);
  }
});

test(`resilience: devsvc refuses a gRPC message just over ${MAX_MESSAGE_BYTES} bytes with RESOURCE_EXHAUSTED and keeps answering`, async () => {
  const client = devSvcClient(up.listener('devsvc').url.host);
  after(() => client.close());
  const get = (name: string) =>
    new Promise<ServiceError | null>((resolve) => client.Get({ name }, new Metadata(), { deadline: Date.now() + 30_000 }, (err) => resolve(err)));
  const [over, fine] = await Promise.all([get('d'.repeat(MAX_MESSAGE_BYTES)), get('well-behaved')]);
  assert.equal(over?.code, status.RESOURCE_EXHAUSTED, over?.message);
  assert.equal(fine, null);
  assert.equal(await get('after'), null);
});

/** Keeps an SSE stream of a running script open without reading it, once the script has started. */
async function sseLeftOpen(listener: Listener): Promise<Vanishing> {
  const client = vanishingClient(listener.url, `GET /stubborn HTTP/1.1\r\nHost: ${listener.url.host}\r\nAccept: text/event-stream\r\n\r\n`, 0, 'silent');
  await new Promise<void>((resolve) => {
    client.socket.on('data', (chunk: Buffer) => {
      if (chunk.includes('data: started')) resolve();
    });
    client.socket.once('close', () => resolve());
  });
  client.socket.pause();
  return client;
}

test('resilience: after a burst of clients vanishing mid-request on every listener, SIGTERM ends offcloud up with 0 within 5 s and no child process group left', async () => {
  const clients: Vanishing[] = [];
  for (const listener of up.listeners) {
    if (listener.url.protocol.startsWith('http')) clients.push(...vanishingHttp(listener.url));
  }
  const scripts = up.listener('scripts');
  for (let i = 0; i < 20; i++) clients.push(vanishingClient(scripts.url, `GET /stubborn HTTP/1.1\r\nHost: x\r\n\r\n`, i % 5, 'drop'));
  clients.push(await sseLeftOpen(scripts), await sseLeftOpen(scripts));
  // MQTT over TLS: no handshake, a CONNECT cut short, a CONNECT announcing more than it sends.
  const mqtt = up.listener('hub', /MQTT/);
  clients.push(
    vanishingClient(new URL(`tcp://${mqtt.url.host}`), '', 0, 'silent'),
    vanishingClient(mqtt.url, Buffer.from([0x10, 0x7f, 0x00, 0x04, 0x4d]), 0, 'silent'),
    vanishingClient(mqtt.url, Buffer.from([0x10, 0xff, 0xff, 0x03, 0x00, 0x04]), 10, 'drop'),
  );
  // gRPC: a connection preface cut short, silence, and calls cancelled in flight.
  const grpc = new URL(`tcp://${up.listener('devsvc').url.host}`);
  clients.push(vanishingClient(grpc, 'PRI * HTTP/2.0\r\n\r\nSM', 0, 'silent'), vanishingClient(grpc, '', 0, 'silent'));
  const devsvc = devSvcClient(grpc.host);
  for (let i = 0; i < 10; i++) leftCall(devsvc).cancel();
  await Promise.all(clients.map((c) => c.done));
  await eventually(() => (up.process.exitCode === null ? true : assert.fail('offcloud up ended during the burst')), 'the burst to settle', 5000);

  const runGroups = new Set((await readFile(pidsFile, 'utf8')).split('\n').filter(Boolean).map(Number));
  assert.ok(runGroups.size >= 2, 'the two streams left open run their scripts');
  const children = descendants(up.process.pid!);
  const ownGroup = groupOf(up.process.pid!);
  const started = Date.now();
  const outcome = await terminate(up.process, 5000);
  devsvc.close();
  assert.notEqual(outcome, 'late', `still running 5 s after SIGTERM; stderr:\n${up.stderr.text.slice(-3000)}`);
  assert.deepEqual(outcome, [0, null], `exit after ${Date.now() - started} ms; stderr:\n${up.stderr.text.slice(-3000)}`);
  // The children in up's own group (tsx's esbuild services) are checked one by one; the other groups whole.
  const groups = new Set([...runGroups, ...children.map((p) => p.pgid).filter((pgid) => pgid !== ownGroup)]);
  const childPids = new Set(children.map((p) => p.pid));
  const leftOver = () => [...liveMembers(groups), ...liveMembers(new Set([ownGroup])).filter((p) => childPids.has(p.pid))];
  // SIGKILL reached them before the exit; the kernel takes a moment to end what it reached.
  await eventually(() => leftOver().length === 0, 'every child process group to be gone', 1000).catch(() => undefined);
  assert.deepEqual(leftOver(), [], "processes of the children's groups still alive after exit");
});

/** A gRPC call started and left: cancelled before any answer. */
function leftCall(devsvc: ReturnType<typeof devSvcClient>) {
  return devsvc.Get({ name: 'leaving' }, new Metadata(), { deadline: Date.now() + 10_000 }, () => undefined);
}
