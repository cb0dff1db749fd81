import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createReadStream } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { join, resolve } from 'node:path';
import sharp from 'sharp';
import { startScoring } from '../../src/scoring/server.ts';
import { startScoringFrontend } from '../../src/scoring/frontend-server.ts';
import { imageToPixels, loadLabels } from '../../src/scoring/client.ts';
import { DEFAULT_MODEL, IMAGENET_LABELS } from '../../src/models/catalogue.ts';
import { ChecksumError, sha256OfFile } from '../../src/models/pull.ts';
import { modelSearchPath, PACKAGE_ROOT, resolveModelFile } from '../../src/common/models.ts';
import type { RunningComponent } from '../../src/common/component.ts';
import { quiet, tempDataDir } from '../helpers/index.ts';
import { scoreImage } from '../../src/scoring/commands.ts';
import { pullModels } from '../../src/models/commands.ts';
import { UsageError } from '../../src/common/errors.ts';
import { crosswordSvg, honeycombSvg, pictureFile, runCli } from './fixtures.ts';

/** Runs a command in this process and returns what it printed. */
async function printed(command: (args: string[], print: (line: string) => void) => Promise<number>, args: string[]): Promise<string> {
  const lines: string[] = [];
  assert.equal(await command(args, (line) => lines.push(line)), 0);
  return lines.join('\n');
}

const PACKAGE_MODELS = resolve(PACKAGE_ROOT, 'models');
/** The scoring files, as `offcloud models pull` names them. */
const SCORING_MODELS = ['imagenet-mobilenetv2-int8', 'imagenet-labels'];
const cleanups: (() => unknown)[] = [];
let dataDir: string;
let scoring: RunningComponent;
let frontend: RunningComponent;
let honeycombPng: string;
/** Serves test files: /images/* from the data dir, /good/* the real model files, /bad/* altered copies. */
let files: Server;
let filesBase: string;

before(async () => {
  dataDir = await tempDataDir({ after: (fn: () => unknown) => cleanups.push(fn) });
  scoring = await startScoring({ ...quiet, dataDir });
  frontend = await startScoringFrontend({ ...quiet, dataDir, tls: true, services: [`imagenet=${scoring.facts!.scoring!.url}`] });
  honeycombPng = join(dataDir, 'honeycomb.png');
  await writeFile(honeycombPng, await pictureFile(honeycombSvg(640), 'png'));
  files = createServer((req, res) => {
    const [, kind, ...rest] = (req.url ?? '').split('/');
    const relative = rest.join('/');
    if (kind === 'images')
      return createReadStream(join(dataDir, relative))
        .on('error', () => res.writeHead(404).end())
        .pipe(res);
    if (kind === 'good')
      return createReadStream(join(PACKAGE_MODELS, relative))
        .on('error', () => res.writeHead(404).end())
        .pipe(res);
    if (kind === 'bad') {
      return void readFile(join(PACKAGE_MODELS, relative)).then(
        (bytes) => {
          bytes[bytes.length >> 1]! ^= 0xff;
          res.end(bytes);
        },
        () => res.writeHead(404).end(),
      );
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((done) => files.listen(0, '127.0.0.1', done));
  filesBase = `http://127.0.0.1:${(files.address() as { port: number }).port}`;
});
after(async () => {
  await new Promise((done) => files.close(done));
  await frontend.close();
  await scoring.close();
  await Promise.all(cleanups.map((fn) => fn()));
});

interface JsonOutput {
  top: { rank: number; index: number; code: string; name: string; probability: number }[];
  time: number;
}

test('R-SCORE-6 the client prints the top-5 classes with class code and name from the 1000-entry list', async () => {
  const run = await runCli(['score', honeycombPng, '--url', scoring.facts!.scoring!.url]);
  assert.equal(run.code, 0, run.stderr);
  const lines = run.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 6, run.stdout);
  assert.match(lines[0]!, /^ 1\. 0\.\d{4} {2}n03530642 {2}honeycomb {2}\(class 599\)$/);
  assert.match(lines[5]!, /^inference time \d+\.\d{4} s/);
  const output = JSON.parse(await printed(scoreImage, [honeycombPng, '--url', scoring.facts!.scoring!.url, '--json', '--top', '3'])) as JsonOutput;
  assert.equal(output.top.length, 3);
  assert.deepEqual({ ...output.top[0], probability: 0 }, { rank: 1, index: 599, code: 'n03530642', name: 'honeycomb', probability: 0 });
  assert.ok(output.top[0]!.probability >= output.top[1]!.probability);
  assert.ok(output.time > 0);
});

test('R-SCORE-6 `offcloud score` is the client; `offcloud scoring score` is another name for it; --help shows its usage', async () => {
  const [short, long, help, missing] = await Promise.all([
    runCli(['score', honeycombPng, '--url', scoring.facts!.scoring!.url, '--json']),
    runCli(['scoring', 'score', honeycombPng, '--url', scoring.facts!.scoring!.url, '--json']),
    runCli(['score', '--help']),
    runCli(['score']),
  ]);
  assert.equal(short.code, 0, short.stderr);
  assert.equal(long.code, 0, long.stderr);
  const top = (run: { stdout: string }) => (JSON.parse(run.stdout) as JsonOutput).top;
  assert.deepEqual(top(short), top(long));
  assert.equal(top(short)[0]!.index, 599);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^usage: offcloud score <image file or URL>/);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /give one image file or URL\nusage: offcloud score/);
  assert.match((await runCli(['--help'])).stdout, /^ {2}score {2,}classify an image/m);
});

test('R-SCORE-6 the class list has 1000 [class code, name] entries', async () => {
  const labels = await loadLabels(resolveModelFile({ relativePath: IMAGENET_LABELS.relativePath, dataDir }));
  assert.equal(labels.length, 1000);
  assert.deepEqual(labels[0], ['n01440764', 'tench']);
  assert.equal(new Set(labels.map(([code]) => code)).size, 1000);
});

test('R-SCORE-7 the client scales any image to 224×224 (shorter side to 256, centre crop)', async () => {
  const wide = await sharp({ create: { width: 900, height: 300, channels: 3, background: { r: 200, g: 10, b: 10 } } })
    .composite([{ input: { create: { width: 300, height: 300, channels: 3, background: { r: 10, g: 10, b: 220 } } }, left: 300, top: 0 }])
    .jpeg()
    .toBuffer();
  const pixels = await imageToPixels(wide);
  assert.equal(pixels.length, 3 * 224 * 224);
  // The centre third is blue and fills the 224 crop of the 768×256 scaled image (its centre 224 columns lie in 272..496).
  const red = pixels.subarray(0, 224 * 224);
  const blue = pixels.subarray(2 * 224 * 224);
  assert.ok(blue.every((v) => v > 180) && red.every((v) => v < 60));
});

test('R-SCORE-6 R-SCORE-12 through the TLS front-end with --frontend, --key and --ca; the image given by URL', async () => {
  const key = frontend.facts!['scoring-frontend']!.services.imagenet!.primaryKey;
  await writeFile(join(dataDir, 'crossword.webp'), await pictureFile(crosswordSvg(), 'webp'));
  const output = await printed(scoreImage, [
    `${filesBase}/images/crossword.webp`,
    '--frontend',
    frontend.facts!['scoring-frontend']!.url,
    '--service',
    'imagenet',
    '--key',
    key,
    '--ca',
    frontend.caCertPath!,
    '--json',
    '--floats',
  ]);
  assert.equal((JSON.parse(output) as JsonOutput).top[0]!.name, 'crossword_puzzle');
  await assert.rejects(
    printed(scoreImage, [honeycombPng, '--frontend', frontend.facts!['scoring-frontend']!.url, '--key', 'nope', '--ca', frontend.caCertPath!]),
    /answered 401/,
  );
});

test('R-SCORE-7 a file that is not an image, or bad arguments, are usage errors (exit 2), not a crash', async () => {
  const notImage = join(dataDir, 'not-an-image.jpg');
  await writeFile(notImage, 'hello');
  for (const [args, message] of [
    [[notImage], /cannot decode the image/],
    [[join(dataDir, 'absent.png')], /cannot read/],
    [[], /give one image file or URL/],
    [[honeycombPng, '--top', '0'], /--top must be/],
    [[honeycombPng, '--frontend', 'https://localhost:1'], /needs --key/],
    [[honeycombPng, '--bogus'], /Unknown option/],
  ] as const) {
    await assert.rejects(
      printed(scoreImage, [...args, '--url', scoring.facts!.scoring!.url]),
      (err: unknown) => err instanceof UsageError && message.test(err.message),
    );
  }
});

test("R-SCORE-1 model lookup order: --model, then $OFFCLOUD_MODELS_DIR, then <data-dir>/models, then the package's own models/", async (t) => {
  const own = await tempDataDir(t);
  const envDir = join(own, 'env-models');
  for (const dir of [join(own, 'models'), envDir]) {
    await mkdir(join(dir, 'imagenet-mobilenetv2-int8'), { recursive: true });
    await copyFile(join(PACKAGE_MODELS, DEFAULT_MODEL.relativePath), join(dir, DEFAULT_MODEL.relativePath));
  }
  const lookup = (env: NodeJS.ProcessEnv, explicit?: string) => resolveModelFile({ relativePath: DEFAULT_MODEL.relativePath, dataDir: own, env, explicit });
  const explicit = join(own, 'models', DEFAULT_MODEL.relativePath);
  assert.equal(lookup({ OFFCLOUD_MODELS_DIR: envDir }, explicit), explicit);
  assert.equal(lookup({ OFFCLOUD_MODELS_DIR: envDir }), join(envDir, DEFAULT_MODEL.relativePath));
  assert.equal(lookup({}), join(own, 'models', DEFAULT_MODEL.relativePath));
  assert.equal(
    resolveModelFile({ relativePath: DEFAULT_MODEL.relativePath, dataDir: join(own, 'empty'), env: {} }),
    join(PACKAGE_MODELS, DEFAULT_MODEL.relativePath),
  );
  assert.deepEqual(modelSearchPath(own, { OFFCLOUD_MODELS_DIR: envDir }), [envDir, join(own, 'models'), PACKAGE_MODELS]);
  assert.throws(() => resolveModelFile({ relativePath: 'nothing/here.onnx', dataDir: own, env: {} }), /not found .*offcloud models pull/);
});

test('R-SCORE-1 the container loads the model $OFFCLOUD_MODELS_DIR points at, and says clearly when a model cannot serve', async (t) => {
  const own = await tempDataDir(t);
  await mkdir(join(own, 'imagenet-mobilenetv2-int8'), { recursive: true });
  await writeFile(join(own, DEFAULT_MODEL.relativePath), 'not an onnx model');
  const previous = process.env.OFFCLOUD_MODELS_DIR;
  process.env.OFFCLOUD_MODELS_DIR = own;
  try {
    await assert.rejects(startScoring({ ...quiet, dataDir: own }), (err: Error) =>
      err.message.startsWith(`cannot load model ${join(own, DEFAULT_MODEL.relativePath)}:`),
    );
  } finally {
    if (previous === undefined) delete process.env.OFFCLOUD_MODELS_DIR;
    else process.env.OFFCLOUD_MODELS_DIR = previous;
  }
  await assert.rejects(startScoring({ ...quiet, dataDir: own, model: join(own, 'missing.onnx') }), /missing\.onnx \(--model\) does not exist/);
  // A real ONNX model with another input size (the face detector) is refused at start, by name.
  await assert.rejects(
    startScoring({ ...quiet, dataDir: own, model: join(PACKAGE_MODELS, 'face-ultralight-rfb/version-RFB-640.onnx') }),
    /does not take a float32 \[1,3,224,224\] input/,
  );
});

test('models pull downloads every default file from a mirror and checks its sha256; a second pull keeps them', async (t) => {
  const target = join(await tempDataDir(t), 'models');
  const first = await printed(pullModels, [...SCORING_MODELS, '--models-dir', target, '--mirror', `${filesBase}/good`]);
  for (const file of [DEFAULT_MODEL, IMAGENET_LABELS]) assert.equal(await sha256OfFile(join(target, file.relativePath)), file.sha256);
  assert.match(first, /sha256 ok/);
  const second = await printed(pullModels, [...SCORING_MODELS, '--models-dir', target, '--mirror', `${filesBase}/good`]);
  assert.match(second, /present, checksum ok[\s\S]*present, checksum ok/);
});

test('models pull refuses a file whose sha256 is wrong and leaves nothing behind', async (t) => {
  const target = join(await tempDataDir(t), 'models');
  await assert.rejects(
    printed(pullModels, [...SCORING_MODELS, '--models-dir', target, '--mirror', `${filesBase}/bad`]),
    (err: Error) =>
      err instanceof ChecksumError && new RegExp(`sha256 is [0-9a-f]{64}, expected ${DEFAULT_MODEL.sha256}; the file was not saved`).test(err.message),
  );
  assert.deepEqual(await readdir(join(target, 'imagenet-mobilenetv2-int8')), []);
  await assert.rejects(printed(pullModels, [...SCORING_MODELS, '--models-dir', target, '--mirror', `${filesBase}/nothing`]), /answered 404/);
  await assert.rejects(printed(pullModels, [...SCORING_MODELS, '--models-dir', target, '--mirror', 'http://127.0.0.1:1']), /cannot download/);
});
