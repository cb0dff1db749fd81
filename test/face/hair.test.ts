/**
 * facialHair and hair: the heads a user trains with
 * `offcloud models train face-hair`, on a small labelled set made here
 * (test/face/hair-set.ts: real faces with hair painted on, no CelebA), and
 * the container answering from them with the reference's shape.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { request } from 'undici';
import { startBilling } from '../../src/billing/server.ts';
import { seededRandom } from '../../src/common/random.ts';
import { trainModel } from '../../src/face/hair/command.ts';
import { checkHeadsFile, HAIR_COLOURS, type HeadsFile } from '../../src/face/hair/heads.ts';
import { areaUnderCurve, fitLogistic, predict } from '../../src/face/hair/logistic.ts';
import { foldsOf } from '../../src/face/hair/train.ts';
import { LineWatcher, quiet, tempDataDir } from '../helpers/index.ts';
import { startFaceWithBilling, type FaceWithBilling } from './container.ts';
import { writeHairSet } from './hair-set.ts';
import { portrait } from './images.ts';

const BIN = new URL('../../bin/offcloud.js', import.meta.url).pathname;

let dir: string;
const running: FaceWithBilling[] = [];

before(async () => {
  dir = await tempDataDir({ after });
  // Eight people twice (men and women of the contact sheet), and four others as the check set.
  const people: [number, number][] = [
    [0, 1],
    [0, 3],
    [1, 6],
    [1, 9],
    [2, 2],
    [3, 4],
    [4, 2],
    [5, 2],
  ];
  await writeHairSet(join(dir, 'train'), { cells: people, variants: 2, seed: 5 });
  await writeHairSet(join(dir, 'check'), {
    cells: [
      [0, 5],
      [1, 5],
      [3, 2],
      [4, 1],
    ],
    variants: 1,
    seed: 9,
  });
});

after(async () => {
  for (const { face, billing } of running) {
    await face.close();
    await billing.close();
  }
});

test('logistic heads: L-BFGS finds the direction that separates, the penalty shrinks it, the same data gives the same weights', () => {
  const n = 200;
  const d = 5;
  const next = seededRandom(3);
  const x = new Float32Array(n * d).map(() => next() * 2 - 1);
  // The label is the sign of 3·x0 − 2·x1 (noise-free): a fitted head must rank by it.
  const labels = Int8Array.from({ length: n }, (_, i) => (3 * x[i * d]! - 2 * x[i * d + 1]! > 0 ? 1 : -1));
  const rows = Int32Array.from({ length: n }, (_, i) => i);
  const design = { x, d };
  const loose = fitLogistic(design, rows, labels, 10);
  const tight = fitLogistic(design, rows, labels, 0.01);
  const scores = Array.from(rows, (i) => predict(loose, design, i));
  assert.ok(areaUnderCurve(scores, Array.from(labels))! > 0.99);
  assert.ok(loose.weights[0]! > 0 && loose.weights[1]! < 0, 'the signs of the true direction');
  assert.ok(Math.abs(loose.weights[2]!) < Math.abs(loose.weights[0]!) / 5, 'an unrelated feature weighs little');
  const norm = (w: Float64Array) => Math.hypot(...w);
  assert.ok(norm(tight.weights) < norm(loose.weights) / 3, 'a smaller C shrinks the weights');
  assert.deepEqual(fitLogistic(design, rows, labels, 10), loose);
});

test('AUC: ranks, ties count half, undefined without both classes', () => {
  assert.equal(areaUnderCurve([0.1, 0.4, 0.35, 0.8], [-1, -1, 1, 1]), 0.75);
  assert.equal(areaUnderCurve([0.5, 0.5], [-1, 1]), 0.5);
  assert.equal(areaUnderCurve([0.2, 0.3], [1, 1]), null);
});

test('folds are person-disjoint and fixed by the seed', () => {
  const people = ['ann', 'bob', 'ann', 'cy', 'dee', 'bob', 'eve', 'cy'];
  const folds = foldsOf(people, 3, 7);
  for (const [i, person] of people.entries()) for (const [j, other] of people.entries()) if (person === other) assert.equal(folds[i], folds[j]);
  assert.deepEqual(foldsOf(people, 3, 7), folds);
  assert.equal(new Set(folds).size, 3);
});

test('--celeba is refused without --accept-celeba-terms, naming the terms', async () => {
  await assert.rejects(
    trainModel(['face-hair', '--celeba', join(dir, 'train')], () => {}),
    /non-commercial research.*--accept-celeba-terms/s,
  );
  await assert.rejects(
    trainModel(['face-hair', '--images', join(dir, 'train')], () => {}),
    /--terms/,
  );
  await assert.rejects(
    trainModel(['face-sunglasses', '--images', join(dir, 'train'), '--terms', 'x'], () => {}),
    /only face-hair/,
  );
});

let heads: HeadsFile;
let headsPath: string;

/** The training arguments after `face-hair`: the set made in before(), its identities and its check set. */
const trainingArguments = () => [
  '--images',
  join(dir, 'train'),
  '--terms',
  'made by the test suite from MIT-licensed photos',
  '--identities',
  join(dir, 'train', 'identities.txt'),
  '--check',
  join(dir, 'check'),
];

test('models train face-hair: progress, heads and a model card', async () => {
  const lines: string[] = [];
  headsPath = join(dir, 'a', 'face-hair.json');
  await trainModel(['face-hair', ...trainingArguments(), '--out', headsPath], (line) => lines.push(line));
  assert.ok(
    lines.some((line) => /^features: 16\/16 images \(100 %\)/.test(line)),
    'progress while extracting',
  );
  assert.ok(lines.some((line) => /^beard: \d+ positives of \d+, cross-validated AUC/.test(line)));
  heads = checkHeadsFile(JSON.parse(await readFile(headsPath, 'utf8')));
  const { card } = heads;
  assert.equal(card.dataTerms, 'made by the test suite from MIT-licensed photos');
  assert.equal(card.training.personDisjoint, true);
  assert.equal(card.identities, 8);
  for (const auc of Object.values(card.crossValidatedAuc)) assert.ok(auc === null || (auc >= 0 && auc <= 1));
  const groups = new Set(card.check!.rows.map((row) => row.group));
  assert.deepEqual([...groups].sort(), ['all', 'men', 'women']);
  const markdown = await readFile(join(dir, 'a', 'face-hair.card.md'), 'utf8');
  assert.match(markdown, /Terms, as accepted by the user: made by the test suite/);
  assert.match(markdown, /\| beard \| women \| \d+ \| \d+ \|/);
  assert.match(markdown, /Never answers the hair colours .*red, white, other/);
});

interface HairAnswer {
  faceRectangle: { width: number };
  faceAttributes: {
    gender: string;
    facialHair: Record<string, unknown>;
    hair: { bald: unknown; invisible: unknown; hairColor: { color: unknown; confidence: unknown }[] };
  };
}

test("the image's two commands: `offcloud models train face-hair` writes the same heads into $OFFCLOUD_MODELS_DIR (/models in the image), and `offcloud face` started with it answers facialHair and hair", async () => {
  // As `podman run -v models:/models offcloud models train face-hair ...` and then `... offcloud face Eula=accept ...`
  // run them: the image sets OFFCLOUD_MODELS_DIR=/models; here a folder outside either data dir, so only the variable leads to it.
  const modelsDir = join(dir, 'volume');
  const env = { ...process.env, OFFCLOUD_MODELS_DIR: modelsDir };
  // The command run in this process (as the CLI runs it) with the image's variable set, writing where it leads.
  const previous = process.env.OFFCLOUD_MODELS_DIR;
  process.env.OFFCLOUD_MODELS_DIR = modelsDir;
  try {
    await trainModel(['face-hair', ...trainingArguments(), '--data-dir', await tempDataDir({ after })], () => {});
  } finally {
    if (previous === undefined) delete process.env.OFFCLOUD_MODELS_DIR;
    else process.env.OFFCLOUD_MODELS_DIR = previous;
  }
  const written = join(modelsDir, 'face-hair', 'face-hair.json');
  assert.ok((await readFile(written)).equals(await readFile(headsPath)), 'the same data and seed give the same bytes');
  assert.equal(await readFile(join(modelsDir, 'face-hair', 'face-hair.card.md'), 'utf8'), await readFile(join(dir, 'a', 'face-hair.card.md'), 'utf8'));

  const dataDir = await tempDataDir({ after });
  const billing = await startBilling({ ...quiet, dataDir, demoResources: true });
  const { billingUrl, demoApiKeys } = billing.facts!.billing!;
  const args = ['face', `Eula=accept`, `Billing=${billingUrl}`, `ApiKey=${demoApiKeys!.face!}`, '--port', '0', '--workers', '1', '--data-dir', dataDir];
  const child = spawn(process.execPath, [BIN, ...args, '--log-level', 'warn'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = once(child, 'exit');
  try {
    const stdout = new LineWatcher(child.stdout);
    const stderr = new LineWatcher(child.stderr);
    const line = await stdout.waitFor(/http:\/\/127\.0\.0\.1:\d+\/face\/v1\.0\/detect/, 120_000).catch((err: Error) => {
      throw new Error(`${err.message}\nstderr:\n${stderr.text.slice(-3000)}`);
    });
    const endpoint = /http:\/\/127\.0\.0\.1:\d+\/face\/v1\.0\/detect/.exec(line)![0];
    const answer = await request(`${endpoint}?returnFaceAttributes=facialHair,hair`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: await portrait(),
    });
    const body = await answer.body.text();
    assert.equal(answer.statusCode, 200, body);
    const [face] = JSON.parse(body) as HairAnswer[];
    assert.deepEqual(Object.keys(face!.faceAttributes), ['facialHair', 'hair']);
    assert.deepEqual(Object.keys(face!.faceAttributes.facialHair), ['moustache', 'beard', 'sideburns']);
    assert.deepEqual(Object.keys(face!.faceAttributes.hair), ['bald', 'invisible', 'hairColor']);
  } finally {
    child.kill('SIGTERM');
    await exited;
    await billing.close();
  }
});

test('R-FACE-5 --hair-model: facialHair and hair in the reference shape; a face under 60 px gets zeros and invisible', async () => {
  const container = await startFaceWithBilling(await tempDataDir({ after }), { workers: 1, hairModel: headsPath });
  running.push(container);
  const base = new URL(container.face.urls[0]!.url).origin;
  const detect = async (image: Buffer) => {
    const answer = await request(`${base}/face/v1.0/detect?returnFaceAttributes=gender,facialHair,hair`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: image,
    });
    assert.equal(answer.statusCode, 200);
    return (await answer.body.json()) as HairAnswer[];
  };
  const [face] = await detect(await portrait());
  assert.ok(face!.faceRectangle.width >= 60);
  const { facialHair, hair } = face!.faceAttributes;
  // The reference's keys, in its order, each a confidence.
  assert.deepEqual(Object.keys(face!.faceAttributes), ['gender', 'facialHair', 'hair']);
  assert.deepEqual(Object.keys(facialHair), ['moustache', 'beard', 'sideburns']);
  for (const value of Object.values(facialHair)) assert.ok(typeof value === 'number' && value >= 0 && value <= 1);
  assert.deepEqual(Object.keys(hair), ['bald', 'invisible', 'hairColor']);
  assert.ok(typeof hair.bald === 'number' && typeof hair.invisible === 'boolean' && Array.isArray(hair.hairColor));
  for (const { color, confidence } of hair.hairColor) {
    assert.ok(HAIR_COLOURS.includes(color as (typeof HAIR_COLOURS)[number]) && typeof confidence === 'number');
  }
  const confidences = hair.hairColor.map((c) => c.confidence as number);
  assert.deepEqual(
    confidences,
    [...confidences].sort((a, b) => b - a),
    'most likely colour first',
  );

  // The portrait shrunk to a face of about 45 px on a plain 400 × 300 photo.
  const small = await sharp(await portrait())
    .resize(110, 110)
    .toBuffer();
  const photo = await sharp({ create: { width: 400, height: 300, channels: 3, background: '#9a9a9a' } })
    .composite([{ input: small, left: 150, top: 90 }])
    .jpeg({ quality: 92 })
    .toBuffer();
  const [tiny] = await detect(photo);
  assert.ok(tiny!.faceRectangle.width < 60, `a face of ${tiny!.faceRectangle.width} px`);
  assert.deepEqual(tiny!.faceAttributes.facialHair, { moustache: 0, beard: 0, sideburns: 0 });
  assert.deepEqual(tiny!.faceAttributes.hair, { bald: 0, invisible: true, hairColor: [] });
});

test('heads left at face-hair/face-hair.json in a models folder are found without the flag; one that is no heads file stops the start', async () => {
  const dataDir = await tempDataDir({ after });
  await mkdir(join(dataDir, 'models', 'face-hair'), { recursive: true });
  const bad = join(dataDir, 'models', 'face-hair', 'face-hair.json');
  await sharp({ create: { width: 4, height: 4, channels: 3, background: '#000' } })
    .png()
    .toFile(bad);
  await assert.rejects(startFaceWithBilling(dataDir, { workers: 1 }), /hair heads .*face-hair\.json.*not JSON/);
});
