import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { cp, readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { join, resolve } from 'node:path';
import { PACKAGE_ROOT, resolveModelFile } from '../../src/common/models.ts';
import { FACE_DETECTOR, FACE_DETECTOR_320, IMAGENET_LABELS, MASK_WEIGHTS, MODEL_FILES } from '../../src/models/catalogue.ts';
import { listModels, pullModels, selectModelFiles } from '../../src/models/commands.ts';
import { ChecksumError, pullModelFiles, sha256OfFile } from '../../src/models/pull.ts';
import { StartupError, UsageError } from '../../src/common/errors.ts';
import { LineWatcher, tempDataDir } from '../helpers/index.ts';

const PACKAGE_MODELS = resolve(PACKAGE_ROOT, 'models');
const SHIPPED = MODEL_FILES.filter((f) => f.shipped);

async function printed(command: (args: string[], print: (line: string) => void) => Promise<number>, args: string[]): Promise<string> {
  const lines: string[] = [];
  assert.equal(await command(args, (line) => lines.push(line)), 0);
  return lines.join('\n');
}

/** `python3 -m http.server` over a folder: the simplest mirror an air-gapped site has (HTTP/1.0, closes after each file). */
async function pythonMirror(t: { after(fn: () => unknown): void }, folder: string): Promise<string> {
  const server = spawn('python3', ['-u', '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', folder], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => server.kill());
  const line = await new LineWatcher(server.stdout).waitFor(/port \d+/, 20_000);
  return `http://127.0.0.1:${/port (\d+)/.exec(line)![1]}`;
}

test('the catalogue matches the files the package ships: sha256 and size of each', async () => {
  for (const file of SHIPPED) {
    const path = join(PACKAGE_MODELS, file.relativePath);
    assert.equal(await sha256OfFile(path), file.sha256, file.relativePath);
    assert.equal((await readFile(path)).length, file.size, file.relativePath);
  }
  // Every model card names the sha256 of its files, and RFB-320's card entry is the catalogue's.
  for (const file of MODEL_FILES) {
    const card = await readFile(join(PACKAGE_MODELS, file.relativePath.split('/')[0]!, 'MODEL_CARD.md'), 'utf8');
    assert.ok(card.includes(file.sha256), `${file.relativePath}'s card gives its sha256`);
  }
});

test('models pull through python3 -m http.server: every file of the models named, checked by sha256; a bad copy is refused', async (t) => {
  const mirror = join(await tempDataDir(t), 'mirror');
  await cp(PACKAGE_MODELS, mirror, { recursive: true });
  const base = await pythonMirror(t, mirror);
  const target = join(await tempDataDir(t), 'models');
  // Whole models by name, and the detector by its file (its folder also holds RFB-320, which the package does not ship).
  const names = [...new Set(SHIPPED.map((f) => f.relativePath.split('/')[0]!))].filter((name) => name !== 'face-ultralight-rfb');
  const output = await printed(pullModels, [...names, FACE_DETECTOR.relativePath, '--models-dir', target, '--mirror', base]);
  for (const file of SHIPPED) assert.equal(await sha256OfFile(join(target, file.relativePath)), file.sha256, file.relativePath);
  assert.match(output, /group1-shard1of1\.bin: saved to .*, sha256 ok/);
  // The lookup takes the data dir's copy before the package's.
  assert.equal(resolveModelFile({ ...FACE_DETECTOR, dataDir: join(target, '..'), env: {} }), join(target, FACE_DETECTOR.relativePath));

  // A mirror copy with one byte changed is not saved; the good copy already there stays.
  const bytes = await readFile(join(mirror, MASK_WEIGHTS.relativePath));
  bytes[bytes.length >> 1]! ^= 0xff;
  await writeFile(join(mirror, MASK_WEIGHTS.relativePath), bytes);
  await assert.rejects(printed(pullModels, ['face-attributes-mask-aizoo', '--force', '--models-dir', target, '--mirror', base]), ChecksumError);
  assert.equal(await sha256OfFile(join(target, MASK_WEIGHTS.relativePath)), MASK_WEIGHTS.sha256);
  assert.deepEqual((await readdir(join(target, 'face-attributes-mask-aizoo'))).sort(), ['group1-shard1of1.bin', 'model.json']);

  // A file the mirror lacks (RFB-320 ships in no package) is named with the server's answer.
  await assert.rejects(printed(pullModels, [FACE_DETECTOR_320.relativePath, '--models-dir', target, '--mirror', base]), /version-RFB-320\.onnx: the server answered 404/);
});

test('models pull: an unknown name or option is a usage error naming the way out; unreachable hosts say so', async (t) => {
  assert.throws(() => selectModelFiles(['nope']), (err: Error) => err instanceof UsageError && /offcloud models list/.test(err.message));
  assert.deepEqual(selectModelFiles(['face-ultralight-rfb']), [FACE_DETECTOR, FACE_DETECTOR_320]);
  assert.equal(selectModelFiles([]).length, MODEL_FILES.length);
  await assert.rejects(printed(pullModels, ['--model', 'x']), (err: Error) => err instanceof UsageError && /usage: offcloud models pull/.test(err.message));
  const target = join(await tempDataDir(t), 'models');
  await assert.rejects(printed(pullModels, ['imagenet-labels', '--models-dir', target, '--mirror', 'http://127.0.0.1:1']), /cannot reach 127\.0\.0\.1:1 \(ECONNREFUSED\); check that the mirror is running/);
});

test('models list shows each file, where the lookup finds it, and the real flags that replace it', async (t) => {
  const output = await printed(listModels, ['--data-dir', await tempDataDir(t)]);
  assert.match(output, new RegExp(`found: ${PACKAGE_MODELS}/face-ultralight-rfb/version-RFB-640\\.onnx; replace with --face-detector-model <file> \\(offcloud up\\) or --detector-model <file> \\(offcloud face\\)`));
  assert.match(output, /missing: `offcloud models pull face-ultralight-rfb\/version-RFB-320\.onnx`/);
  assert.match(output, /--scoring-model <file> \(offcloud up\)/);
});

/**
 * A mirror that misbehaves, by the first segment of the path: `endless` sends
 * bytes until the client hangs up (or 8 MB), `declared` announces a gigabyte,
 * `trickle` sends a byte every 50 ms for ever, `to-file` and `to-broken`
 * redirect to a file: URL and to no URL at all.
 */
async function hostileMirror(t: { after(fn: () => unknown): void }) {
  const sent = { endless: 0 };
  const server = createServer((request, response: ServerResponse) => {
    const kind = request.url!.split('/')[1];
    if (kind === 'to-file') return response.writeHead(302, { location: 'file:///etc/passwd' }).end();
    if (kind === 'to-broken') return response.writeHead(302, { location: 'http://[::1' }).end();
    if (kind === 'declared') return response.writeHead(200, { 'content-length': String(1e9) }).end('{}');
    const trickle = kind === 'trickle';
    response.writeHead(200, { 'content-type': 'application/octet-stream' });
    const chunk = Buffer.alloc(trickle ? 1 : 64 * 1024, 0x7b);
    const timer = setInterval(() => {
      if (!trickle) sent.endless += chunk.length;
      if (sent.endless > 8e6) return response.end();
      response.write(chunk);
    }, trickle ? 50 : 1);
    response.on('close', () => clearInterval(timer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  t.after(() => server.closeAllConnections());
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sent };
}

/** A failure told in one line, as the CLI prints an OffcloudError. */
function oneLine(pattern: RegExp) {
  return (err: Error) => err instanceof StartupError && !err.message.includes('\n') && pattern.test(err.message);
}

test('models pull --mirror: an endless body stops at the catalogued size, a slow one at the deadline; nothing is saved', async (t) => {
  const mirror = await hostileMirror(t);
  const target = join(await tempDataDir(t), 'models');
  await assert.rejects(
    printed(pullModels, ['imagenet-labels', '--models-dir', target, '--mirror', `${mirror.base}/endless`]),
    oneLine(/the server sends more than the catalogued 35368 bytes; the file was not saved/),
  );
  assert.ok(mirror.sent.endless < IMAGENET_LABELS.size + 1024 * 1024, `the mirror got to send ${mirror.sent.endless} bytes`);
  await assert.rejects(
    printed(pullModels, ['imagenet-labels', '--models-dir', target, '--mirror', `${mirror.base}/declared`]),
    oneLine(/the server sends more than the catalogued 35368 bytes/),
  );
  await assert.rejects(
    pullModelFiles([IMAGENET_LABELS], { targetDir: target, mirror: `${mirror.base}/trickle`, deadlineMs: 500 }),
    oneLine(/cannot download http:\/\/127\.0\.0\.1:\d+\/trickle\/imagenet-labels\/imagenet_class_index\.json: not done within 0\.5 s; the file was not saved/),
  );
  assert.deepEqual(await readdir(join(target, 'imagenet-labels')).catch(() => []), []);
});

test('models pull --mirror: a redirect to file: or to no URL, and a mirror that is no http URL, are one-line errors', async (t) => {
  const mirror = await hostileMirror(t);
  const target = join(await tempDataDir(t), 'models');
  const pull = (base: string) => printed(pullModels, ['imagenet-labels', '--models-dir', target, '--mirror', base]);
  await assert.rejects(pull(`${mirror.base}/to-file`), oneLine(/it redirects to file:\/\/\/etc\/passwd: not an http: or https: URL/));
  await assert.rejects(pull(`${mirror.base}/to-broken`), oneLine(/it redirects to "http:\/\/\[::1": not a URL/));
  await assert.rejects(pull('not a url'), oneLine(/the mirror URL "not a url\/imagenet-labels\/imagenet_class_index\.json": not a URL/));
  await assert.rejects(pull('file:///etc'), oneLine(/the mirror URL file:\/\/\/etc\/imagenet-labels\/imagenet_class_index\.json: not an http: or https: URL/));
  assert.deepEqual(await readdir(join(target, 'imagenet-labels')).catch(() => []), []);
  // The command itself: one line on stderr, no stack, exit code 1.
  const cli = promisify(execFile)(process.execPath, [resolve(PACKAGE_ROOT, 'bin/offcloud.js'), 'models', 'pull', 'imagenet-labels', '--models-dir', target, '--mirror', `${mirror.base}/to-file`]);
  await assert.rejects(cli, (err: { code: number; stderr: string }) => {
    assert.equal(err.code, 1);
    assert.match(err.stderr, /^offcloud: cannot download .* it redirects to file:\/\/\/etc\/passwd: not an http: or https: URL\n$/);
    return true;
  });
});
