/**
 * The container must not fetch `{"url"}` images from inside its
 * own network by default, and every fetch failure must read the same, so
 * that the answer is no port scanner. Real local HTTP servers, the real
 * downloader (no models needed).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDownloader, downloadImage, isPublicAddress } from '../../src/face/download.ts';
import { FaceApiError } from '../../src/face/errors.ts';

const limits = { maxBytes: 1024 * 1024, timeoutMs: 1000 };
let server: Server;
let base: string;
let closedPort: number;
const seen: string[] = [];

before(async () => {
  server = createServer((req, res) => {
    seen.push(req.url ?? '');
    if (req.url === '/image.jpg') return res.writeHead(200, { 'content-type': 'image/jpeg' }).end(Buffer.alloc(2048, 7));
    if (req.url === '/to-loopback') return res.writeHead(302, { location: `${base}/image.jpg` }).end();
    if (req.url === '/hang') return;
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // A port that was just free: nothing listens there.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  closedPort = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
});

after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

async function failure(url: string, allowPrivate: boolean): Promise<{ code: string; message: string }> {
  const dispatcher = createDownloader({ allowPrivate });
  try {
    await downloadImage(url, limits, dispatcher);
  } catch (err) {
    assert.ok(err instanceof FaceApiError, String(err));
    return { code: err.code, message: err.message };
  } finally {
    await dispatcher.close();
  }
  assert.fail(`${url} was fetched`);
}

test('photo URLs: loopback, private, link-local and mapped addresses are refused by default, before any connection', async () => {
  const port = (server.address() as AddressInfo).port;
  const before = seen.length;
  const targets = [
    `${base}/image.jpg`,
    `http://localhost:${port}/image.jpg`,
    `http://[::1]:${port}/image.jpg`,
    `http://[::ffff:127.0.0.1]:${port}/image.jpg`,
    `http://2130706433:${port}/image.jpg`,
    `http://0.0.0.0:${port}/image.jpg`,
    'http://10.1.2.3/image.jpg',
    'http://172.20.0.1/image.jpg',
    'http://192.168.1.1/image.jpg',
    'http://169.254.169.254/latest/meta-data/',
    'http://[fe80::1]/image.jpg',
    'http://[fd00::1]/image.jpg',
  ];
  const answers = await Promise.all(targets.map((url) => failure(url, false)));
  for (const [i, answer] of answers.entries()) assert.deepEqual(answer, answers[0], targets[i]);
  assert.equal(answers[0]!.code, 'InvalidURL');
  assert.equal(seen.length, before, 'nothing reached the local server');
});

test('photo URLs: one answer for every fetch failure — open port, closed port, 404, hang, refused address', async () => {
  const allowed = await Promise.all([
    failure(`http://127.0.0.1:${closedPort}/image.jpg`, true),
    failure(`${base}/missing.jpg`, true),
    failure(`${base}/hang`, true),
  ]);
  const refused = await failure(`${base}/image.jpg`, false);
  for (const answer of allowed) assert.deepEqual(answer, refused);
});

test('photo URLs: --url-allow-private lets a trusted local server be used, redirects included', async () => {
  const dispatcher = createDownloader({ allowPrivate: true });
  try {
    assert.equal((await downloadImage(`${base}/image.jpg`, limits, dispatcher)).length, 2048);
    assert.equal((await downloadImage(`${base}/to-loopback`, limits, dispatcher)).length, 2048);
  } finally {
    await dispatcher.close();
  }
});

test('photo URLs: which addresses count as public', () => {
  for (const address of ['8.8.8.8', '93.184.216.34', '2606:4700::1111', '::ffff:8.8.8.8']) assert.equal(isPublicAddress(address), true, address);
  for (const address of [
    '127.0.0.1',
    '10.0.0.1',
    '100.64.0.1',
    '172.31.255.255',
    '192.168.0.1',
    '169.254.169.254',
    '0.0.0.0',
    '224.0.0.1',
    '::',
    '::1',
    'fe80::1',
    'fc00::1',
    '::ffff:10.0.0.1',
    '::ffff:7f00:1',
    'not an address',
  ]) {
    assert.equal(isPublicAddress(address), false, address);
  }
});
