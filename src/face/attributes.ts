/**
 * The face attributes of Face v1.0 detect: which ones this container can
 * estimate, and how a measured face becomes the reference's JSON (field
 * order and value vocabularies of the reference, §2.3 types).
 */
import { badArgument } from './errors.ts';
import type { GlassesProbabilities } from './models/glasses.ts';
import type { MeasuredFace, Measurements } from './models/index.ts';
import type { QualityValues } from './models/quality.ts';

/** Every name the API accepts in returnFaceAttributes, in the reference's response order. */
export const ALL_ATTRIBUTES = [
  'age',
  'gender',
  'smile',
  'facialHair',
  'glasses',
  'headPose',
  'emotion',
  'hair',
  'makeup',
  'occlusion',
  'accessories',
  'blur',
  'exposure',
  'noise',
  'mask',
  'qualityForRecognition',
] as const;
export type FaceAttribute = (typeof ALL_ATTRIBUTES)[number];

/** Attributes with a real estimator here (README: attribute → estimator → how it was checked). */
export const SUPPORTED_ATTRIBUTES: readonly FaceAttribute[] = [
  'age',
  'gender',
  'smile',
  'glasses',
  'headPose',
  'emotion',
  'accessories',
  'blur',
  'exposure',
  'noise',
  'mask',
];

/** What detection_02/03 can return, as in the real service (detection_02: none). */
const ATTRIBUTES_OF_DETECTION_MODEL: Record<string, readonly FaceAttribute[]> = {
  detection_01: ALL_ATTRIBUTES,
  detection_02: [],
  detection_03: ['headPose', 'mask', 'qualityForRecognition'],
};

export type UnsupportedAttributes = 'refuse' | 'omit';

/**
 * Parses returnFaceAttributes (comma-separated, names matched without regard
 * to case). Unknown names are a BadArgument as in the reference; known names
 * without an estimator here are refused naming them, or dropped under
 * `--unsupported-attributes omit`.
 */
export function parseAttributeList(raw: string, detectionModel: string, unsupported: UnsupportedAttributes): FaceAttribute[] {
  const names = raw
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  const wanted = new Set<FaceAttribute>();
  for (const name of names) {
    const known = ALL_ATTRIBUTES.find((a) => a.toLowerCase() === name.toLowerCase());
    if (!known) throw badArgument('Argument returnFaceAttributes is not valid.');
    wanted.add(known);
  }
  const allowed = ATTRIBUTES_OF_DETECTION_MODEL[detectionModel] ?? ALL_ATTRIBUTES;
  const notForModel = [...wanted].filter((a) => !allowed.includes(a));
  if (notForModel.length) {
    throw badArgument(`Attribute ${notForModel.join(', ')} is not supported by detection model ${detectionModel}.`);
  }
  const missing = [...wanted].filter((a) => !SUPPORTED_ATTRIBUTES.includes(a));
  if (missing.length && unsupported === 'refuse') {
    throw badArgument(
      `Attribute ${missing.join(', ')} is not supported by this container: no estimator for it can run here. ` +
        `Supported: ${SUPPORTED_ATTRIBUTES.join(', ')}.`,
    );
  }
  return ALL_ATTRIBUTES.filter((a) => wanted.has(a) && SUPPORTED_ATTRIBUTES.includes(a));
}

/** The models a set of attributes (and landmarks) needs: the mesh only for landmarks and head pose. */
export function measurementsFor(attributes: readonly FaceAttribute[], landmarks: boolean): Measurements {
  const has = (...names: FaceAttribute[]) => names.some((n) => attributes.includes(n));
  return {
    mesh: landmarks || has('headPose'),
    ageAndGender: has('age', 'gender'),
    emotion: has('emotion', 'smile'),
    glasses: has('glasses', 'accessories'),
    mask: has('accessories', 'mask'),
    quality: has('blur', 'exposure', 'noise'),
  };
}

/** Above this, a classifier's probability counts as "present". */
const PRESENT = 0.5;
/**
 * Glasses are reported only on faces at least this many pixels wide, and
 * only when a glasses classifier is this sure. Measured on known faces shrunk
 * and re-embedded (docs/face.md, "Reliability by face size"): below 60 px the
 * sunglasses classifier calls bare faces Sunglasses (7 % at 40 px, 13 % at
 * 32 px, 56 % at 20 px), so smaller faces get the real service's default,
 * NoGlasses; at 60 px and above, over 0.9, it called no bare face Sunglasses.
 */
export const GLASSES_MIN_WIDTH = 60;
const GLASSES_SURE = 0.9;

/** The two glasses probabilities as they count: none on a face too small to tell. */
function glassesOf(face: MeasuredFace): GlassesProbabilities {
  const p = required(face.glasses, 'glasses');
  return face.rectangle.width < GLASSES_MIN_WIDTH ? { eyeglasses: 0, sunglasses: 0 } : p;
}
/** The mask attribute's "uncertain" band. */
const MASK_SURE = 0.7;

export type Level = 'Low' | 'Medium' | 'High';

/** The reference's level thresholds: Low < 0.25 ≤ Medium < 0.75 ≤ High. */
export function levelOf(value: number): Level {
  return value < 0.25 ? 'Low' : value < 0.75 ? 'Medium' : 'High';
}

export function exposureLevelOf(value: number): 'UnderExposure' | 'GoodExposure' | 'OverExposure' {
  return value < 0.25 ? 'UnderExposure' : value > 0.75 ? 'OverExposure' : 'GoodExposure';
}

const round = (x: number, digits: number) => Number(x.toFixed(digits));

/** `{blurLevel, value}`, `{noiseLevel, value}` or `{exposureLevel, value}`, value to two decimals. */
function measuredLevel(quality: QualityValues, attribute: 'blur' | 'noise' | 'exposure'): Record<string, string | number> {
  const value = round(quality[attribute], 2);
  return { [`${attribute}Level`]: attribute === 'exposure' ? exposureLevelOf(value) : levelOf(value), value };
}

function required<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`measurement ${what} is missing`);
  return value;
}

/** faceAttributes of one face, only the requested attributes, in the reference's order. */
export function faceAttributes(face: MeasuredFace, attributes: readonly FaceAttribute[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const attribute of attributes) {
    switch (attribute) {
      case 'age':
        out.age = round(required(face.age, 'age'), 1);
        break;
      case 'gender':
        out.gender = required(face.gender, 'gender');
        break;
      case 'smile':
        out.smile = round(required(face.emotion, 'emotion').happy, 3);
        break;
      case 'glasses': {
        const p = glassesOf(face);
        out.glasses = p.sunglasses > GLASSES_SURE ? 'Sunglasses' : p.eyeglasses > GLASSES_SURE ? 'ReadingGlasses' : 'NoGlasses';
        break;
      }
      case 'headPose': {
        const pose = required(face.headPose, 'headPose');
        out.headPose = { roll: round(pose.roll, 1), yaw: round(pose.yaw, 1), pitch: round(pose.pitch, 1) };
        break;
      }
      case 'emotion': {
        const e = required(face.emotion, 'emotion');
        // The model has no contempt class: 0, as documented.
        out.emotion = {
          anger: round(e.angry, 3),
          contempt: 0,
          disgust: round(e.disgust, 3),
          fear: round(e.fear, 3),
          happiness: round(e.happy, 3),
          neutral: round(e.neutral, 3),
          sadness: round(e.sad, 3),
          surprise: round(e.surprise, 3),
        };
        break;
      }
      case 'accessories': {
        const glasses = glassesOf(face);
        const mask = required(face.mask, 'mask');
        const worn: { type: 'glasses' | 'mask'; confidence: number }[] = [];
        const glassesConfidence = Math.max(glasses.eyeglasses, glasses.sunglasses);
        if (glassesConfidence > GLASSES_SURE) worn.push({ type: 'glasses', confidence: round(glassesConfidence, 2) });
        if (mask > PRESENT) worn.push({ type: 'mask', confidence: round(mask, 2) });
        out.accessories = worn;
        break;
      }
      case 'blur':
      case 'noise':
      case 'exposure':
        out[attribute] = measuredLevel(required(face.quality, 'quality'), attribute);
        break;
      case 'mask': {
        const p = required(face.mask, 'mask');
        const type = p >= MASK_SURE ? 'faceMask' : p <= 1 - MASK_SURE ? 'noMask' : 'uncertain';
        out.mask = { type, noseAndMouthCovered: type === 'faceMask' };
        break;
      }
      default:
        throw new Error(`no estimator for ${attribute}`);
    }
  }
  return out;
}
