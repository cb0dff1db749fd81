/**
 * Face v1.2 detect beside v1.0, with the SDK a developer installs
 * today (@azure-rest/ai-vision-face), unmodified: endpoint and key. One
 * container (real models) against a real billing endpoint started with its
 * ApiKey, shared by the tests of this file.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import createFaceClient, { isUnexpected, type FaceClient } from '@azure-rest/ai-vision-face';
import { AzureKeyCredential } from '@azure/core-auth';
import { LANDMARK_NAMES } from '../../src/face/models/landmarks.ts';
import { tempDataDir } from '../helpers/index.ts';
import { runHttpsClient } from '../cognitive/https.ts';
import * as photos from './images.ts';
import { startFaceWithBilling, type FaceWithBilling } from './container.ts';

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const cleanup: (() => Promise<unknown>)[] = [];
let dataDir: string;
let container: FaceWithBilling;
let client: FaceClient;
let base: string;

before(async () => {
  dataDir = await tempDataDir({ after: (fn: () => unknown) => void cleanup.push(async () => fn()) });
  container = await startFaceWithBilling(dataDir, { meteringIntervalMs: 3_600_000 });
  base = new URL(container.face.urls[0]!.url).origin;
  // The SDK sends its key over HTTPS only unless told this (see the --tls test below).
  client = createFaceClient(base, new AzureKeyCredential('any-key'), { allowInsecureConnection: true });
});

after(async () => {
  await container.face.close();
  await container.billing.close();
  for (const fn of cleanup.reverse()) await fn();
});

type Query = Record<string, string | boolean | number | string[]>;

async function detect(image: Buffer, queryParameters: Query, sdk = client) {
  return sdk.path('/detect').post({ contentType: 'application/octet-stream', queryParameters, body: image });
}

async function onlyFace(image: Buffer, queryParameters: Query) {
  const response = await detect(image, queryParameters);
  if (isUnexpected(response)) throw new Error(JSON.stringify(response.body));
  assert.equal(response.body.length, 1);
  return response.body[0]!;
}

async function badArgument(image: Buffer, queryParameters: Query, message?: RegExp) {
  const response = await detect(image, queryParameters);
  assert.ok(isUnexpected(response), JSON.stringify(queryParameters));
  if (!isUnexpected(response)) return;
  assert.equal(response.status, '400');
  assert.equal(response.body.error.code, 'BadArgument', JSON.stringify(queryParameters));
  if (message) assert.match(response.body.error.message, message);
}

test('the v1.2 SDK with detection_03 and recognition_04 gets faceId, recognitionModel, landmarks and attributes', async () => {
  const face = await onlyFace(await photos.portrait(), {
    detectionModel: 'detection_03',
    recognitionModel: 'recognition_04',
    returnFaceId: true,
    returnRecognitionModel: true,
    faceIdTimeToLive: 120,
    returnFaceLandmarks: true,
    returnFaceAttributes: ['headPose', 'blur', 'mask', 'qualityForRecognition'],
  });
  assert.match(face.faceId!, GUID);
  assert.equal(face.recognitionModel, 'recognition_04');
  assert.deepEqual(Object.keys(face.faceLandmarks!), [...LANDMARK_NAMES]);
  const attributes = face.faceAttributes!;
  assert.deepEqual(Object.keys(attributes), ['headPose', 'blur', 'mask', 'qualityForRecognition']);
  assert.deepEqual(Object.keys(attributes.headPose!), ['roll', 'yaw', 'pitch']);
  // v1.2 writes its values in camelCase.
  assert.match(attributes.blur!.blurLevel, /^(low|medium|high)$/);
  assert.equal(attributes.mask!.type, 'noMask');
  assert.match(attributes.qualityForRecognition!, /^(low|medium|high)$/);
  const plain = await onlyFace(await photos.portrait(), { returnFaceId: false });
  assert.equal(plain.faceId, undefined);
  assert.equal(plain.faceAttributes, undefined);
});

test('v1.2 glasses, occlusion and accessories come from the glasses and mask models, in v1.2 spelling', async () => {
  const attributes = ['glasses', 'occlusion', 'accessories', 'exposure', 'noise'];
  const dark = (await onlyFace(await photos.sunglasses(), { returnFaceAttributes: attributes })).faceAttributes!;
  assert.equal(dark.glasses, 'sunglasses');
  assert.deepEqual(dark.occlusion, { foreheadOccluded: false, eyeOccluded: true, mouthOccluded: false });
  assert.deepEqual(
    dark.accessories!.map((a) => a.type),
    ['glasses'],
  );
  assert.equal(dark.exposure!.exposureLevel, 'goodExposure');
  assert.match(dark.noise!.noiseLevel, /^(low|medium|high)$/);
  const bare = (await onlyFace(await photos.portrait(), { returnFaceAttributes: attributes })).faceAttributes!;
  assert.equal(bare.glasses, 'noGlasses');
  assert.deepEqual(bare.occlusion, { foreheadOccluded: false, eyeOccluded: false, mouthOccluded: false });
  const masked = (await onlyFace(await photos.maskedPortrait(), { returnFaceAttributes: ['occlusion'] })).faceAttributes!;
  assert.equal(masked.occlusion!.mouthOccluded, true);
});

test('qualityForRecognition falls when the face is blurred', async () => {
  const order = ['low', 'medium', 'high'];
  const query = { recognitionModel: 'recognition_03', returnFaceAttributes: ['qualityForRecognition', 'blur'] };
  const sharpFace = (await onlyFace(await photos.portrait(), query)).faceAttributes!;
  const blurred = (
    await onlyFace(
      await sharp(await photos.portrait())
        .blur(7)
        .jpeg()
        .toBuffer(),
      query,
    )
  ).faceAttributes!;
  assert.ok(blurred.blur!.value > sharpFace.blur!.value);
  assert.ok(order.indexOf(blurred.qualityForRecognition!) <= order.indexOf(sharpFace.qualityForRecognition!), `${blurred.qualityForRecognition}`);
  assert.equal(blurred.qualityForRecognition, 'low');
});

test('v1.2 refuses what a detection model, a recognition model or v1.2 itself does not offer, with BadArgument', async () => {
  const image = await photos.portrait();
  await badArgument(image, { returnFaceAttributes: ['emotion'] }, /retired or limited in Face v1\.2/);
  await badArgument(image, { returnFaceAttributes: ['age', 'headPose'] }, /age/);
  await badArgument(image, { returnFaceAttributes: ['mask'] }, /not supported by detection model detection_01/);
  await badArgument(image, { detectionModel: 'detection_03', returnFaceAttributes: ['glasses'] }, /detection_03/);
  await badArgument(image, { detectionModel: 'detection_02', returnFaceAttributes: ['headPose'] });
  await badArgument(image, { detectionModel: 'detection_02', returnFaceLandmarks: true });
  await badArgument(image, { returnFaceAttributes: ['qualityForRecognition'] }, /recognition_03 or recognition_04/);
  await badArgument(image, { returnFaceAttributes: ['nose'] });
  await badArgument(image, { recognitionModel: 'recognition_09' });
  await badArgument(image, { faceIdTimeToLive: 59 });
  const unreachable = await client.path('/detect').post({ contentType: 'application/json', body: { url: 'http://127.0.0.1:1/none.jpg' } });
  assert.ok(isUnexpected(unreachable));
  if (isUnexpected(unreachable)) assert.equal(unreachable.body.error.code, 'InvalidURL');
  const tooSmall = await detect(Buffer.alloc(10), {});
  assert.ok(isUnexpected(tooSmall) && tooSmall.body.error.code === 'InvalidImageSize');
  // Still serving, and v1.0 still answers in its own spelling.
  const v10 = createFaceClient(base, new AzureKeyCredential('any-key'), { allowInsecureConnection: true, apiVersion: 'v1.0' as 'v1.2' });
  const response = await detect(await photos.sunglasses(), { returnFaceAttributes: ['glasses'] }, v10);
  assert.ok(!isUnexpected(response));
  if (!isUnexpected(response)) assert.equal(response.body[0]!.faceAttributes!.glasses, 'Sunglasses');
});

test('the v1.1-preview.1 path answers as v1.2', async () => {
  const preview = createFaceClient(base, new AzureKeyCredential('any-key'), { allowInsecureConnection: true, apiVersion: 'v1.1-preview.1' });
  const response = await detect(await photos.sunglasses(), { returnFaceAttributes: ['glasses'] }, preview);
  assert.ok(!isUnexpected(response));
  if (!isUnexpected(response)) assert.equal(response.body[0]!.faceAttributes!.glasses, 'sunglasses');
});

test('with --tls the face container serves HTTPS with the local CA and the SDK needs no insecure option', async (t) => {
  const tlsDir = await tempDataDir(t);
  const secure = await startFaceWithBilling(tlsDir, { tls: true, workers: 1 });
  t.after(async () => {
    await secure.face.close();
    await secure.billing.close();
  });
  const endpoint = new URL(secure.face.urls[0]!.url).origin.replace('127.0.0.1', 'localhost');
  assert.match(endpoint, /^https:/);
  const image = join(tlsDir, 'portrait.jpg');
  await writeFile(image, await photos.portrait());
  assert.deepEqual(await runHttpsClient('face', endpoint, secure.face.caCertPath!, image), { faces: 1 });
});
