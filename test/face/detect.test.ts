/**
 * The face container end to end: one container (real models, two worker
 * threads) and one real billing endpoint, shared by every test of this file
 * because loading the models is the slow part. The official
 * @azure/cognitiveservices-face client, undici and photos made from the
 * images inside @vladmandic/human.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { encode as encodeBmp } from 'bmp-ts';
import { request } from 'undici';
import { FaceClient, type FaceModels } from '@azure/cognitiveservices-face';
import { ApiKeyCredentials, RestError } from '@azure/ms-rest-js';
import { startBilling } from '../../src/billing/server.ts';
import { BillingStore } from '../../src/billing/store.ts';
import { CONTAINER_KINDS } from '../../src/cognitive/index.ts';
import type { RunningComponent } from '../../src/common/component.ts';
import type { RunningFace } from '../../src/face/server.ts';
import { decodeImage } from '../../src/face/decode.ts';
import { FaceModels as ModelsInThisThread } from '../../src/face/models/index.ts';
import { LANDMARK_NAMES } from '../../src/face/models/landmarks.ts';
import { quiet, readMetric, tempDataDir } from '../helpers/index.ts';
import * as photos from './images.ts';
import { defaultModelPaths, startFaceWithBilling } from './container.ts';

type Face = FaceModels.DetectedFace;
interface WireFace {
  faceId?: string;
  recognitionModel?: string;
  faceRectangle: { top: number; left: number; width: number; height: number };
  faceLandmarks?: Record<string, { x: number; y: number }>;
  faceAttributes?: Record<string, unknown>;
}

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let dataDir: string;
let billing: RunningComponent;
let billingPort: number;
let face: RunningFace;
let base: string;
let client: FaceClient;
let images: Server;
let imagesUrl: string;
let portrait: Buffer;
/** Successful detect calls made by this file, to compare with what billing counted. */
let transactions = 0;
const cleanup: (() => Promise<unknown>)[] = [];

before(async () => {
  dataDir = await tempDataDir({ after: (fn: () => unknown) => void cleanup.push(async () => fn()) });
  ({ billing, face } = await startFaceWithBilling(dataDir, { meteringIntervalMs: 3_600_000, urlTimeoutMs: 1000, urlAllowPrivate: true }));
  billingPort = Number(new URL(billing.facts!.billing!.billingUrl).port);
  base = new URL(face.urls[0]!.url).origin;
  client = new FaceClient(new ApiKeyCredentials({ inHeader: { 'Ocp-Apim-Subscription-Key': 'any-key' } }), base);
  portrait = await photos.portrait();
  images = await serveImages();
  imagesUrl = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
});

after(async () => {
  images?.closeAllConnections();
  await new Promise((resolve) => images?.close(resolve));
  await face?.close();
  await billing?.close();
  for (const fn of cleanup.reverse()) await fn();
});

/** A little web server for the {"url"} requests: an image, text, a hang, a 404. */
async function serveImages(): Promise<Server> {
  const five = await photos.fivePeople();
  const server = createServer((req, res) => {
    if (req.url === '/five.jpg') return res.writeHead(200, { 'content-type': 'image/jpeg' }).end(five);
    if (req.url === '/notes.txt') return res.writeHead(200, { 'content-type': 'text/plain' }).end('these are not the pixels you are looking for\n'.repeat(100));
    if (req.url === '/huge.jpg') return res.writeHead(200, { 'content-type': 'image/jpeg' }).end(Buffer.alloc(7 * 1024 * 1024, 1));
    if (req.url === '/hang.jpg') return; // never answers: the container's time limit must end it
    res.writeHead(404).end('not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

async function detectRaw(body: Buffer | string, query = '', contentType = 'application/octet-stream') {
  const response = await request(`${base}/face/v1.0/detect${query ? `?${query}` : ''}`, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body,
  });
  const text = await response.body.text();
  const json = JSON.parse(text) as unknown;
  if (response.statusCode === 200) transactions++;
  return { status: response.statusCode, headers: response.headers, text, json };
}

async function detectFaces(body: Buffer, query = ''): Promise<WireFace[]> {
  const answer = await detectRaw(body, query);
  assert.equal(answer.status, 200, answer.text);
  return answer.json as WireFace[];
}

async function onlyFace(body: Buffer, query: string): Promise<WireFace> {
  const faces = await detectFaces(body, query);
  assert.equal(faces.length, 1, JSON.stringify(faces));
  return faces[0]!;
}

function assertError(answer: { status: number; json: unknown }, status: number, code: string): void {
  assert.equal(answer.status, status, JSON.stringify(answer.json));
  const error = (answer.json as { error: { code: string; message: string } }).error;
  assert.equal(error.code, code);
  assert.equal(typeof error.message, 'string');
}

async function rejectsWithCode(call: Promise<unknown>, statusCode: number, code: string): Promise<void> {
  await assert.rejects(call, (err: unknown) => {
    assert.ok(err instanceof RestError, String(err));
    assert.equal(err.statusCode, statusCode);
    assert.equal(err.code, code);
    return true;
  });
}

const area = (f: WireFace) => f.faceRectangle.width * f.faceRectangle.height;

test('R-FACE-1 R-FACE-4 raw JPEG bytes: five faces, largest first, each rectangle on its own face, GUID faceIds', async () => {
  const faces = await detectFaces(await photos.fivePeople());
  assert.equal(faces.length, 5);
  for (let i = 1; i < faces.length; i++) assert.ok(area(faces[i - 1]!) >= area(faces[i]!), 'largest first');
  const panelsHit = new Set<number>();
  for (const f of faces) {
    assert.match(f.faceId!, GUID);
    const r = f.faceRectangle;
    assert.deepEqual(Object.keys(r), ['top', 'left', 'width', 'height']);
    for (const v of Object.values(r)) assert.ok(Number.isInteger(v));
    const panel = photos.FIVE_PANELS.findIndex((p) => r.left >= p.left && r.left + r.width <= p.right);
    assert.ok(panel >= 0, `rectangle ${JSON.stringify(r)} lies inside one panel`);
    assert.ok(r.width >= 60 && r.height >= 60, 'a face, not a fragment');
    panelsHit.add(panel);
  }
  assert.equal(panelsHit.size, 5, 'one face per person');
  assert.equal(new Set(faces.map((f) => f.faceId)).size, 5);
});

test('R-FACE-2 the official client: detectWithUrl fetches the image from a URL ({"url"} body)', async () => {
  const faces = await client.face.detectWithUrl(`${imagesUrl}/five.jpg`);
  transactions++;
  assert.equal(faces.length, 5);
  assert.match(faces[0]!.faceId!, GUID);
});

test('R-FACE-3 R-FACE-5 the official client: detectWithStream returns exactly the requested attributes, typed as §2.3', async () => {
  const faces: Face[] = await client.face.detectWithStream(portrait, {
    returnFaceAttributes: ['accessories', 'age', 'blur', 'emotion', 'exposure', 'gender', 'glasses'],
  });
  transactions++;
  assert.equal(faces.length, 1);
  const a = faces[0]!.faceAttributes!;
  assert.deepEqual(Object.keys(a).sort(), ['accessories', 'age', 'blur', 'emotion', 'exposure', 'gender', 'glasses']);
  assert.ok(Array.isArray(a.accessories));
  assert.equal(typeof a.age, 'number');
  assert.ok(['Low', 'Medium', 'High'].includes(a.blur!.blurLevel!));
  assert.equal(typeof a.blur!.value, 'number');
  assert.deepEqual(Object.keys(a.emotion!).sort(), ['anger', 'contempt', 'disgust', 'fear', 'happiness', 'neutral', 'sadness', 'surprise']);
  for (const v of Object.values(a.emotion!)) assert.equal(typeof v, 'number');
  assert.ok(['UnderExposure', 'GoodExposure', 'OverExposure'].includes(a.exposure!.exposureLevel!));
  assert.ok(['male', 'female'].includes(a.gender!));
  assert.ok(['NoGlasses', 'ReadingGlasses', 'Sunglasses'].includes(a.glasses!));
});

test('R-FACE-3 the comma-separated list on the wire: only the named attributes, in the reference order', async () => {
  const f = await onlyFace(portrait, 'returnFaceAttributes=noise,headPose,AGE');
  assert.deepEqual(Object.keys(f.faceAttributes!), ['age', 'headPose', 'noise']);
  assert.equal(f.faceLandmarks, undefined);
  const plain = await onlyFace(portrait, '');
  assert.equal(plain.faceAttributes, undefined);
});

test('R-FACE-5 attributes without an estimator here (facialHair, hair, makeup, occlusion) are refused naming them', async () => {
  const answer = await detectRaw(portrait, 'returnFaceAttributes=age,hair,facialHair');
  assertError(answer, 400, 'BadArgument');
  const message = (answer.json as { error: { message: string } }).error.message;
  assert.match(message, /facialHair/);
  assert.match(message, /hair/);
  assert.match(message, /Supported: age, gender/);
  assert.match(message, /offcloud models train face-hair .*--hair-model <file>/, 'the refusal says how to turn facialHair and hair on');
  await rejectsWithCode(client.face.detectWithStream(portrait, { returnFaceAttributes: ['makeup'] }), 400, 'BadArgument');
});

test('R-FACE-4 returnFaceId=false drops faceId; returnRecognitionModel echoes the model; field order as the reference', async () => {
  const f = await onlyFace(
    portrait,
    'returnFaceId=false&returnRecognitionModel=true&recognitionModel=recognition_04&returnFaceLandmarks=true&returnFaceAttributes=age',
  );
  assert.deepEqual(Object.keys(f), ['recognitionModel', 'faceRectangle', 'faceLandmarks', 'faceAttributes']);
  assert.equal(f.recognitionModel, 'recognition_04');
  const withId = await onlyFace(portrait, 'returnRecognitionModel=true');
  assert.deepEqual(Object.keys(withId), ['faceId', 'recognitionModel', 'faceRectangle']);
});

test('R-FACE-4 landmarks: the 27 points in the reference order, on the face where they belong', async () => {
  const faces = await client.face.detectWithStream(portrait, { returnFaceLandmarks: true });
  transactions++;
  const raw = await onlyFace(portrait, 'returnFaceLandmarks=true');
  assert.deepEqual(Object.keys(raw.faceLandmarks!), [...LANDMARK_NAMES]);
  const l = faces[0]!.faceLandmarks!;
  const r = faces[0]!.faceRectangle!;
  for (const name of LANDMARK_NAMES) {
    const p = l[name]!;
    assert.ok(p.x >= r.left - 5 && p.x <= r.left + r.width + 5 && p.y >= r.top - 5 && p.y <= r.top + r.height + 5, `${name} inside the face`);
  }
  // The API's left is the image's left; eyes above the nose tip, the nose tip above the mouth.
  assert.ok(l.pupilLeft!.x < l.pupilRight!.x && l.eyeLeftOuter!.x < l.eyeLeftInner!.x && l.eyeRightInner!.x < l.eyeRightOuter!.x);
  assert.ok(l.mouthLeft!.x < l.mouthRight!.x);
  assert.ok(Math.max(l.pupilLeft!.y, l.pupilRight!.y) < l.noseTip!.y && l.noseTip!.y < l.upperLipTop!.y && l.upperLipTop!.y < l.underLipBottom!.y);
  assert.ok(l.eyebrowLeftOuter!.y < l.eyeLeftTop!.y && l.eyeLeftTop!.y < l.eyeLeftBottom!.y);
  // Each pupil lies between its eye's corners.
  assert.ok(l.pupilLeft!.x > l.eyeLeftOuter!.x && l.pupilLeft!.x < l.eyeLeftInner!.x);
  assert.ok(l.pupilRight!.x > l.eyeRightInner!.x && l.pupilRight!.x < l.eyeRightOuter!.x);
});

test('R-FACE-4 a photo without faces gives []; more than 100 faces gives the 100 largest', async () => {
  assert.deepEqual(await detectFaces(await photos.noFaces()), []);
  const crowd = await detectFaces(await photos.crowd());
  assert.equal(crowd.length, 100);
  for (let i = 1; i < crowd.length; i++) assert.ok(area(crowd[i - 1]!) >= area(crowd[i]!));
  // The container deals the detector's passes (the whole photo and six tiles) to its two workers: the same
  // rectangles as the same passes run one after the other in this thread.
  const models = await ModelsInThisThread.load(defaultModelPaths());
  const here = await models.detect(await decodeImage(await photos.crowd()), 100);
  const key = (r: { left: number; top: number; width: number; height: number }) => [r.left, r.top, r.width, r.height].map((v) => Math.round(v)).join(',');
  assert.deepEqual(crowd.map((f) => key(f.faceRectangle)).sort(), here.map(key).sort());
});

test('R-FACE-5 asking for attributes drops no face — photos of 1, 10 and 60+ faces', async () => {
  const asked = ['age', 'gender', 'glasses', 'emotion', 'blur', 'exposure', 'noise'];
  for (const [name, photo, least] of [
    ['1 face', portrait, 1],
    ['10 faces', await photos.sheetFaces(1, 10), 10],
    ['60+ faces', await photos.sheetFaces(4, 18), 60],
  ] as const) {
    const plain = await detectFaces(photo);
    assert.ok(plain.length >= least, `${name}: ${plain.length} found`);
    const measured = await detectFaces(photo, `returnFaceAttributes=${asked.join(',')}`);
    assert.deepEqual(
      measured.map((f) => f.faceRectangle),
      plain.map((f) => f.faceRectangle),
      name,
    );
    for (const f of measured) assert.deepEqual(Object.keys(f.faceAttributes!), asked, name);
  }
  // The mesh too: landmarks and head pose for every face, however small.
  const ten = await photos.sheetFaces(1, 10);
  const meshed = await detectFaces(ten, 'returnFaceLandmarks=true&returnFaceAttributes=headPose');
  assert.equal(meshed.length, (await detectFaces(ten)).length);
  for (const f of meshed) assert.equal(Object.keys(f.faceLandmarks!).length, 27);
});

test('R-FACE-1 a 36-pixel face in a 1920×1080 photo is found where it is', async () => {
  const small = await sharp(portrait).resize(72, 72).toBuffer();
  const photo = await sharp({ create: { width: 1920, height: 1080, channels: 3, background: '#6a7a8a' } })
    .composite([{ input: small, left: 1500, top: 800 }])
    .jpeg({ quality: 92 })
    .toBuffer();
  const faces = await detectFaces(photo);
  assert.equal(faces.length, 1, JSON.stringify(faces));
  const r = faces[0]!.faceRectangle;
  assert.ok(r.left >= 1500 && r.top >= 800 && r.left + r.width <= 1572 && r.top + r.height <= 872, JSON.stringify(r));
  assert.ok(r.width >= 25 && r.height >= 30, 'the face, not a fragment');
});

test('R-FACE-5 age, gender and emotion from the models: a man and four smiling women', async () => {
  const faces = await detectFaces(await photos.fivePeople(), 'returnFaceAttributes=age,gender,emotion,smile');
  const byPanel = faces.map((f) => ({
    panel: photos.FIVE_PANELS.findIndex((p) => f.faceRectangle.left >= p.left && f.faceRectangle.left < p.right),
    a: f.faceAttributes!,
  }));
  byPanel.sort((x, y) => x.panel - y.panel);
  type Person = {
    age: number;
    gender: string;
    smile: number;
    emotion: Record<'anger' | 'contempt' | 'disgust' | 'fear' | 'happiness' | 'neutral' | 'sadness' | 'surprise', number>;
  };
  const [man, ...women] = byPanel.map((x) => x.a as Person);
  assert.equal(man!.gender, 'male');
  for (const w of women) assert.equal(w.gender, 'female');
  for (const person of [man!, ...women]) {
    assert.ok(person.age > 15 && person.age < 60, `age ${person.age}`);
    assert.equal(person.emotion.contempt, 0, 'the model has no contempt class');
    const sum = Object.values(person.emotion).reduce((s, v) => s + v, 0);
    assert.ok(Math.abs(sum - 1) < 0.05, `emotion sums to ${sum}`);
    assert.equal(person.smile, person.emotion.happiness);
  }
  const smiling = women.filter((w) => w.emotion.happiness > 0.5);
  assert.ok(smiling.length >= 3, JSON.stringify(women.map((w) => w.emotion)));
  assert.ok(man!.emotion.happiness < Math.min(...smiling.map((w) => w.emotion.happiness)));
});

test('R-FACE-5 blur, exposure and noise are measured: a blurred copy is blurrier, a dark one UnderExposure, a bright one OverExposure, a noisy one noisier', async () => {
  const q = 'returnFaceAttributes=blur,exposure,noise';
  type Quality = {
    blur: { blurLevel: string; value: number };
    exposure: { exposureLevel: string; value: number };
    noise: { noiseLevel: string; value: number };
  };
  const measure = async (image: Buffer) => (await onlyFace(image, q)).faceAttributes as Quality;
  const [original, blurred, dark, bright, noisy] = await Promise.all([
    measure(portrait),
    measure(await sharp(portrait).blur(4).jpeg().toBuffer()),
    measure(await sharp(portrait).linear(0.2, 0).jpeg().toBuffer()),
    measure(await sharp(portrait).linear(0.6, 150).jpeg().toBuffer()),
    measure(await photos.withNoise(portrait, 12)),
  ]);
  assert.ok(blurred.blur.value > original.blur.value + 0.15, `${blurred.blur.value} vs ${original.blur.value}`);
  assert.equal(original.exposure.exposureLevel, 'GoodExposure');
  assert.equal(dark.exposure.exposureLevel, 'UnderExposure');
  assert.equal(bright.exposure.exposureLevel, 'OverExposure');
  assert.equal(original.noise.noiseLevel, 'Low');
  assert.ok(noisy.noise.value > original.noise.value + 0.2, `${noisy.noise.value} vs ${original.noise.value}`);
  assert.notEqual(noisy.noise.noiseLevel, 'Low');
});

test('R-FACE-5 head pose: turning the photo 25° clockwise turns the roll by about 25°', async () => {
  const q = 'returnFaceAttributes=headPose';
  const upright = (await onlyFace(portrait, q)).faceAttributes!.headPose as { roll: number };
  const turned = (await onlyFace(await sharp(portrait).rotate(25, { background: '#000' }).jpeg().toBuffer(), q)).faceAttributes!.headPose as { roll: number };
  assert.ok(Math.abs(turned.roll - upright.roll - 25) < 6, `${upright.roll} → ${turned.roll}`);
});

test('R-FACE-5 glasses and accessories: sunglasses are seen, a bare face has none, a mask is a mask', async () => {
  const q = 'returnFaceAttributes=glasses,accessories,mask';
  type Worn = { glasses: string; accessories: { type: string; confidence: number }[]; mask: { type: string; noseAndMouthCovered: boolean } };
  const [shades, bare, masked] = await Promise.all([
    onlyFace(await photos.sunglasses(), q).then((f) => f.faceAttributes as Worn),
    onlyFace(portrait, q).then((f) => f.faceAttributes as Worn),
    onlyFace(await photos.maskedPortrait(), q).then((f) => f.faceAttributes as Worn),
  ]);
  assert.equal(shades.glasses, 'Sunglasses');
  assert.deepEqual(
    shades.accessories.map((a) => a.type),
    ['glasses'],
  );
  assert.equal(bare.glasses, 'NoGlasses');
  assert.deepEqual(bare.accessories, []);
  assert.deepEqual(bare.mask, { type: 'noMask', noseAndMouthCovered: false });
  assert.ok(masked.accessories.some((a) => a.type === 'mask' && a.confidence > 0.5));
  assert.equal(masked.mask.type, 'faceMask');
});

test('R-FACE-1 formats: PNG, GIF, WebP and BMP are read; EXIF orientation is applied before detection', async () => {
  const upright = await photos.fivePeople();
  const { data, info } = await sharp(portrait).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  // bmp-ts encodes from ABGR bytes.
  const abgr = Buffer.alloc(data.length);
  for (let i = 0; i < data.length; i += 4) [abgr[i], abgr[i + 1], abgr[i + 2], abgr[i + 3]] = [255, data[i + 2]!, data[i + 1]!, data[i]!];
  const bmp = encodeBmp({ data: abgr, width: info.width, height: info.height, bitPP: 24 }).data;
  for (const [name, image] of [
    ['png', await sharp(portrait).png().toBuffer()],
    ['gif', await sharp(portrait).gif().toBuffer()],
    ['webp', await sharp(portrait).webp().toBuffer()],
    ['bmp', bmp],
  ] as const) {
    const faces = await detectFaces(image);
    assert.equal(faces.length, 1, name);
  }
  // Stored lying on its side, tagged "rotate 90° clockwise to display" (orientation 6).
  const sideways = await sharp(await sharp(upright).rotate(-90).toBuffer())
    .withMetadata({ orientation: 6 })
    .jpeg()
    .toBuffer();
  const faces = await detectFaces(sideways);
  assert.equal(faces.length, 5);
  for (const f of faces) assert.ok(f.faceRectangle.top + f.faceRectangle.height <= 165, 'rectangles in the upright frame');
});

test('R-FACE-1 bad images: text bytes, truncated JPEG, 1-pixel-wide image, tiny file, 7 MB body, PNG bomb', async () => {
  assertError(await detectRaw(Buffer.from('hello, I am not an image. '.repeat(100))), 400, 'InvalidImage');
  const jpeg = await photos.fivePeople();
  assertError(await detectRaw(jpeg.subarray(0, Math.floor(jpeg.length / 2))), 400, 'InvalidImage');
  const narrow = await sharp({ create: { width: 1, height: 3000, channels: 3, background: '#808080' } })
    .png({ compressionLevel: 0 })
    .toBuffer();
  assertError(await detectRaw(narrow), 400, 'InvalidImageSize');
  assertError(await detectRaw(Buffer.from('GIF89a')), 400, 'InvalidImageSize');
  assertError(await detectRaw(Buffer.alloc(0)), 400, 'InvalidImageSize');
  assertError(await detectRaw(Buffer.alloc(7 * 1024 * 1024, 0xff)), 400, 'InvalidImageSize');
  // 60000 × 60000 pixels claimed by a 5 KB file: refused from the header, never decoded.
  const bomb = await photos.pngBomb(60000, 60000);
  assert.ok(bomb.length < 64 * 1024);
  assertError(await detectRaw(bomb), 400, 'InvalidImageSize');
  await rejectsWithCode(client.face.detectWithStream(Buffer.from('not an image at all '.repeat(80))), 400, 'InvalidImage');
  await rejectsWithCode(client.face.detectWithStream(await sharp(narrow).toBuffer()), 400, 'InvalidImageSize');
});

test('R-FACE-2 bad URLs: non-image, time-out, 404, file://, too big, not a string → InvalidURL / InvalidImage / InvalidImageSize', async () => {
  const json = 'application/json';
  assertError(await detectRaw(JSON.stringify({ url: `${imagesUrl}/notes.txt` }), '', json), 400, 'InvalidImage');
  assertError(await detectRaw(JSON.stringify({ url: `${imagesUrl}/hang.jpg` }), '', json), 400, 'InvalidURL');
  assertError(await detectRaw(JSON.stringify({ url: `${imagesUrl}/missing.jpg` }), '', json), 400, 'InvalidURL');
  assertError(await detectRaw(JSON.stringify({ url: 'file:///etc/passwd' }), '', json), 400, 'InvalidURL');
  assertError(await detectRaw(JSON.stringify({ url: `${imagesUrl}/huge.jpg` }), '', json), 400, 'InvalidImageSize');
  assertError(await detectRaw(JSON.stringify({ url: 42 }), '', json), 400, 'InvalidURL');
  assertError(await detectRaw(JSON.stringify({}), '', json), 400, 'InvalidURL');
  await rejectsWithCode(client.face.detectWithUrl('http://127.0.0.1:1/nothing-listens-here.jpg'), 400, 'InvalidURL');
});

test('R-FACE-1 fuzzing: wrong media types, broken JSON, bad query values, path tricks — the error shape, and the container keeps serving', async () => {
  assertError(await detectRaw('hello', '', 'text/plain'), 415, 'BadArgument');
  assertError(await detectRaw(portrait, '', 'image/jpeg'), 415, 'BadArgument');
  assertError(await detectRaw('{"url": ', '', 'application/json'), 400, 'BadArgument');
  assertError(await detectRaw('[1,2,3]', '', 'application/json'), 400, 'BadArgument');
  assertError(await detectRaw(JSON.stringify({ url: 'x'.repeat(100_000) }), '', 'application/json'), 400, 'BadArgument');
  assertError(await detectRaw(Buffer.from([0xff, 0xfe, 0x7b, 0x00]), '', 'application/json; charset=utf-8'), 400, 'BadArgument');
  for (const query of [
    'returnFaceAttributes=foo',
    'returnFaceAttributes=age,,%00',
    'returnFaceId=maybe',
    'returnFaceLandmarks=1',
    'faceIdTimeToLive=10',
    'faceIdTimeToLive=86401',
    'faceIdTimeToLive=abc',
    'recognitionModel=recognition_99',
    'detectionModel=detection_09',
    'detectionModel=detection_02&returnFaceAttributes=age',
    'detectionModel=detection_02&returnFaceLandmarks=true',
    'detectionModel=detection_03&returnFaceAttributes=age',
    'returnFaceId=true&returnFaceId=false',
  ]) {
    assertError(await detectRaw(portrait, query), 400, 'BadArgument');
  }
  for (const path of ['/face/v1.0/detect/../../etc/passwd', '/face/v1.0/%2e%2e/detect', '/face/v2.0/detect', '/face/v1.0/detect/extra']) {
    const response = await request(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: portrait });
    assert.equal(response.statusCode, 404, path);
    assert.equal(((await response.body.json()) as { error: { code: string } }).error.code, 'NotFound');
  }
  // detection_03 with what it supports works.
  const f = await onlyFace(portrait, 'detectionModel=detection_03&returnFaceAttributes=headPose,mask');
  assert.deepEqual(Object.keys(f.faceAttributes!), ['headPose', 'mask']);
  assert.equal((await request(`${base}/health`)).statusCode, 200);
});

test('R-FACE-1 memory stays bounded: twenty refused 7 MB bodies and bombs leave the process about where it was', async () => {
  const big = Buffer.alloc(7 * 1024 * 1024, 0xab);
  const bomb = await photos.pngBomb(30000, 30000);
  const before = process.memoryUsage().rss;
  for (let i = 0; i < 10; i++) {
    assertError(await detectRaw(big), 400, 'InvalidImageSize');
    assertError(await detectRaw(bomb), 400, 'InvalidImageSize');
  }
  const grown = (process.memoryUsage().rss - before) / (1024 * 1024);
  assert.ok(grown < 200, `RSS grew by ${grown.toFixed(0)} MiB`);
  assert.equal((await detectFaces(portrait)).length, 1);
});

test('R-FACE-1 concurrent requests are all answered (two worker threads share the queue)', async () => {
  const five = await photos.fivePeople();
  const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => detectFaces(i % 2 ? five : portrait)));
  assert.deepEqual(
    answers.map((a) => a.length),
    [1, 5, 1, 5, 1, 5],
  );
});

test('R-FACE-6 container surface: /status says Valid, /swagger lists detect, /ready is 200 once the models are loaded', async () => {
  const status = await request(`${base}/status`);
  assert.equal(((await status.body.json()) as { apiStatus: string }).apiStatus, 'Valid');
  const page = await (await request(`${base}/swagger`)).body.text();
  assert.match(page, /\/face\/v1\.0\/detect/);
  const doc = (await (await request(`${base}/swagger/v1/swagger.json`)).body.json()) as { paths: Record<string, unknown> };
  assert.ok('/face/v1.0/detect' in doc.paths);
  assert.equal((await request(`${base}/ready`)).statusCode, 200);
});

test('R-FACE-6 billing gets counts only: one transaction per image analysed, none for refused requests', async () => {
  await face.billing.report();
  const store = await BillingStore.open(dataDir);
  const totals = store.totals('all').filter((t) => t.meter === CONTAINER_KINDS.face.billedMeter);
  assert.equal(
    totals.reduce((s, t) => s + t.quantity, 0),
    transactions,
  );
});

test('R-FACE-6 with billing unreachable detect answers 503 + Retry-After (CouldNotConnect) and recovers when billing is back', async () => {
  await billing.close();
  await face.billing.report();
  const refused = await detectRaw(portrait);
  assertError(refused, 503, 'CouldNotConnect');
  assert.ok(Number(refused.headers['retry-after']) > 0);
  // Without its retry policy: the client would otherwise retry a 503 for minutes.
  const impatient = new FaceClient(new ApiKeyCredentials({ inHeader: { 'Ocp-Apim-Subscription-Key': 'any-key' } }), base, { noRetryPolicy: true });
  await rejectsWithCode(impatient.face.detectWithStream(portrait), 503, 'CouldNotConnect');
  billing = await startBilling({ ...quiet, dataDir, port: billingPort, demoResources: true });
  await face.billing.report();
  assert.equal((await detectFaces(portrait)).length, 1);
});

test('metrics: faces answered and the time per image are counted', async () => {
  const facesBefore = (await readMetric(base, 'offcloud_face_faces_detected_total', { component: 'face' })) ?? 0;
  const imagesBefore = (await readMetric(base, 'offcloud_face_detect_seconds_count')) ?? 0;
  assert.equal((await detectFaces(await photos.fivePeople())).length, 5);
  assert.equal(await readMetric(base, 'offcloud_face_faces_detected_total', { component: 'face' }), facesBefore + 5);
  assert.equal(await readMetric(base, 'offcloud_face_detect_seconds_count'), imagesBefore + 1);
  assert.ok((await readMetric(base, 'offcloud_face_detect_seconds_sum'))! > 0);
});
