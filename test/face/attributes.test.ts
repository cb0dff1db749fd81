/**
 * The attribute catalogue and the query options as plain functions (no
 * socket): what is refused or omitted, level thresholds, detection models.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  exposureLevelOf,
  FACE_V1_0,
  FACE_V1_2,
  faceAttributes,
  levelOf,
  measurementsFor,
  parseAttributeList,
  withHairHeads,
} from '../../src/face/attributes.ts';
import { parseDetectOptions } from '../../src/face/detect-request.ts';
import { FaceApiError } from '../../src/face/errors.ts';

const badArgument = (err: unknown) => err instanceof FaceApiError && err.status === 400 && err.code === 'BadArgument';

test('R-FACE-3 returnFaceAttributes: names without regard to case, duplicates once, response order', () => {
  assert.deepEqual(parseAttributeList(' Noise,age , AGE,headpose', 'detection_01', 'refuse'), ['age', 'headPose', 'noise']);
  assert.deepEqual(parseAttributeList('', 'detection_01', 'refuse'), []);
  assert.throws(() => parseAttributeList('age,beard', 'detection_01', 'refuse'), badArgument);
});

test('R-FACE-5 unsupported attributes: refused by default, dropped under --unsupported-attributes omit', () => {
  assert.throws(
    () => parseAttributeList('hair,age', 'detection_01', 'refuse'),
    (err: Error) => badArgument(err) && /hair/.test(err.message),
  );
  assert.deepEqual(parseAttributeList('hair,age,facialHair,makeup,occlusion,qualityForRecognition', 'detection_01', 'omit'), ['age']);
  const options = parseDetectOptions({ returnFaceAttributes: 'hair' }, 'omit');
  assert.deepEqual(options.attributes, []);
  assert.equal(options.attributesRequested, true, 'faceAttributes still appears, empty');
});

test('R-FACE-5 facialHair and hair from the heads: gated by P(male), invisible under a hat, nothing below 60 px', () => {
  const hair = { moustache: 0.9, beard: 0.8, sideburns: 0.4, bald: 0.1, hat: 0.2, brown: 0.7, black: 0.2, gray: 0.05 };
  const face = (width: number, male: number, scores = hair) => ({ rectangle: { left: 0, top: 0, width, height: width }, male, hair: scores });
  const api = withHairHeads(FACE_V1_0);
  assert.deepEqual(faceAttributes(face(80, 0.5), ['facialHair', 'hair'], api), {
    facialHair: { moustache: 0.45, beard: 0.4, sideburns: 0.2 },
    hair: {
      bald: 0.1,
      invisible: false,
      hairColor: [
        { color: 'brown', confidence: 0.7 },
        { color: 'black', confidence: 0.2 },
        { color: 'gray', confidence: 0.05 },
      ],
    },
  });
  assert.deepEqual(faceAttributes(face(80, 1, { ...hair, hat: 0.9 }), ['hair'], api), { hair: { bald: 0.1, invisible: true, hairColor: [] } });
  assert.deepEqual(faceAttributes(face(59, 1), ['facialHair', 'hair'], api), {
    facialHair: { moustache: 0, beard: 0, sideburns: 0 },
    hair: { bald: 0, invisible: true, hairColor: [] },
  });
  assert.deepEqual(parseAttributeList('hair,age,facialHair', 'detection_01', 'refuse', api), ['age', 'facialHair', 'hair']);
  assert.throws(() => parseAttributeList('hair', 'detection_01', 'refuse', withHairHeads(FACE_V1_2)), badArgument, 'v1.2 retired them either way');
  assert.deepEqual(measurementsFor(['hair'], false).hair, true);
});

test('R-FACE-5 levels use the reference thresholds (0.25 / 0.75)', () => {
  assert.deepEqual([0, 0.24, 0.25, 0.74, 0.75, 1].map(levelOf), ['Low', 'Low', 'Medium', 'Medium', 'High', 'High']);
  assert.deepEqual([0.1, 0.25, 0.75, 0.76].map(exposureLevelOf), ['UnderExposure', 'GoodExposure', 'GoodExposure', 'OverExposure']);
});

test('R-FACE-4 query defaults as the official client sends them, and what each attribute makes the models do', () => {
  const defaults = parseDetectOptions(
    {
      returnFaceId: 'true',
      returnFaceLandmarks: 'false',
      recognitionModel: 'recognition_01',
      returnRecognitionModel: 'false',
      detectionModel: 'detection_01',
      faceIdTimeToLive: '86400',
    },
    'refuse',
  );
  assert.deepEqual(defaults, {
    returnFaceId: true,
    returnFaceLandmarks: false,
    attributes: [],
    attributesRequested: false,
    recognitionModel: 'recognition_01',
    returnRecognitionModel: false,
    detectionModel: 'detection_01',
    faceIdTimeToLive: 86400,
    api: FACE_V1_0,
  });
  const none = { mesh: false, ageAndGender: false, emotion: false, glasses: false, mask: false, quality: false, hair: false };
  assert.deepEqual(measurementsFor([], false), none);
  assert.deepEqual(measurementsFor(['blur'], false), { ...none, quality: true });
  assert.deepEqual(measurementsFor(['accessories'], false), { ...none, glasses: true, mask: true });
  assert.deepEqual(measurementsFor(['smile'], true), { ...none, mesh: true, emotion: true });
  // The mesh runs only for landmarks and head pose: age, gender and emotion read the detector's crop.
  assert.deepEqual(measurementsFor(['age', 'gender', 'emotion'], false), { ...none, ageAndGender: true, emotion: true });
  assert.deepEqual(measurementsFor(['headPose'], false), { ...none, mesh: true });
  assert.throws(() => parseDetectOptions({ detectionModel: 'detection_03', returnFaceAttributes: 'glasses' }, 'refuse'), badArgument);
  assert.deepEqual(parseDetectOptions({ detectionModel: 'DETECTION_03', returnFaceAttributes: 'mask' }, 'refuse').attributes, ['mask']);
});
