/**
 * The face attributes of Face v1.0 and v1.2 detect: which ones each version
 * names and this container can estimate, and how a measured face becomes
 * the reference's JSON (field order and value vocabularies of the reference,
 * §2.3 types; v1.2 writes its values in camelCase).
 */
import { badArgument } from './errors.ts';
import { HAIR_COLOURS } from './hair/heads.ts';
import { GLASSES_MIN_WIDTH, type GlassesProbabilities } from './models/glasses.ts';
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
export { GLASSES_MIN_WIDTH };

/** Names of the v1.0 list that no model here estimates (README: attribute → estimator → how it was checked). */
const WITHOUT_ESTIMATOR: readonly FaceAttribute[] = ['facialHair', 'hair', 'makeup', 'occlusion', 'qualityForRecognition'];

/** Attributes with a real estimator here, in response order. */
export const SUPPORTED_ATTRIBUTES: readonly FaceAttribute[] = ALL_ATTRIBUTES.filter((a) => !WITHOUT_ESTIMATOR.includes(a));

export type UnsupportedAttributes = 'refuse' | 'omit';

/** The attributes the hair heads answer, when the user has trained them. */
const HAIR_ATTRIBUTES: readonly FaceAttribute[] = ['facialHair', 'hair'];
/** How a user turns facialHair and hair on; said whenever one is refused. */
export const HOW_TO_ENABLE_HAIR =
  'facialHair and hair need heads you train on your own machine: run `offcloud models train face-hair --celeba <dir> --accept-celeba-terms` ' +
  '(or --images <dir> --terms <text>), then start the container with --hair-model <file> (`offcloud up --face-hair-model <file>`), ' +
  'or leave the file at face-hair/face-hair.json in a models folder (docs/face.md).';

/** What one API version accepts and answers. */
export interface FaceApiProfile {
  version: 'v1.0' | 'v1.2';
  /** The names returnFaceAttributes accepts. */
  names: readonly FaceAttribute[];
  /** Those with an estimator here. */
  supported: readonly FaceAttribute[];
  /** What each detection model can return, as in the real service (detection_02: none). */
  byDetectionModel: Record<string, readonly FaceAttribute[]>;
  /** v1.0 answers `NoGlasses`, `Low`, `GoodExposure`; v1.2 `noGlasses`, `low`, `goodExposure`. */
  camelCaseValues: boolean;
}

export const FACE_V1_0: FaceApiProfile = {
  version: 'v1.0',
  names: ALL_ATTRIBUTES,
  supported: SUPPORTED_ATTRIBUTES,
  byDetectionModel: { detection_01: ALL_ATTRIBUTES, detection_02: [], detection_03: ['headPose', 'mask', 'qualityForRecognition'] },
  camelCaseValues: false,
};

/** v1.2 retired emotion and gender and limited age, smile, facialHair, hair and makeup. */
const RETIRED_IN_V1_2: readonly FaceAttribute[] = ['age', 'gender', 'smile', 'facialHair', 'emotion', 'hair', 'makeup'];
/** The names v1.2 accepts, in response order. */
const V1_2_ATTRIBUTES: readonly FaceAttribute[] = ALL_ATTRIBUTES.filter((a) => !RETIRED_IN_V1_2.includes(a));

/** The profile with facialHair and hair answered (where the version names them): the container has hair heads. */
export function withHairHeads(api: FaceApiProfile): FaceApiProfile {
  return { ...api, supported: api.names.filter((a) => api.supported.includes(a) || HAIR_ATTRIBUTES.includes(a)) };
}

export const FACE_V1_2: FaceApiProfile = {
  version: 'v1.2',
  names: V1_2_ATTRIBUTES,
  supported: V1_2_ATTRIBUTES,
  byDetectionModel: {
    detection_01: V1_2_ATTRIBUTES.filter((a) => a !== 'mask'),
    detection_02: [],
    detection_03: ['headPose', 'blur', 'mask', 'qualityForRecognition'],
  },
  camelCaseValues: true,
};

/**
 * Parses returnFaceAttributes (comma-separated, names matched without regard
 * to case). Unknown names are a BadArgument as in the reference; known names
 * without an estimator here are refused naming them, or dropped under
 * `--unsupported-attributes omit`.
 */
export function parseAttributeList(raw: string, detectionModel: string, unsupported: UnsupportedAttributes, api: FaceApiProfile = FACE_V1_0): FaceAttribute[] {
  const names = raw
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  const wanted = new Set<FaceAttribute>();
  for (const name of names) {
    const known = ALL_ATTRIBUTES.find((a) => a.toLowerCase() === name.toLowerCase());
    if (!known) throw badArgument('Argument returnFaceAttributes is not valid.');
    if (!api.names.includes(known)) {
      throw badArgument(`Attribute ${known} is retired or limited in Face ${api.version}; it accepts ${api.names.join(', ')}.`);
    }
    wanted.add(known);
  }
  const allowed = api.byDetectionModel[detectionModel] ?? api.names;
  const notForModel = [...wanted].filter((a) => !allowed.includes(a));
  if (notForModel.length) {
    throw badArgument(`Attribute ${notForModel.join(', ')} is not supported by detection model ${detectionModel}.`);
  }
  const missing = [...wanted].filter((a) => !api.supported.includes(a));
  if (missing.length && unsupported === 'refuse') {
    const hint = missing.some((a) => HAIR_ATTRIBUTES.includes(a)) ? ` ${HOW_TO_ENABLE_HAIR}` : '';
    throw badArgument(
      `Attribute ${missing.join(', ')} is not supported by this container: no estimator for it can run here. ` +
        `Supported: ${api.supported.join(', ')}.${hint}`,
    );
  }
  return ALL_ATTRIBUTES.filter((a) => wanted.has(a) && api.supported.includes(a));
}

/** The models a set of attributes (and landmarks) needs: the mesh only for landmarks and head pose. */
export function measurementsFor(attributes: readonly FaceAttribute[], landmarks: boolean): Measurements {
  const has = (...names: FaceAttribute[]) => names.some((n) => attributes.includes(n));
  return {
    mesh: landmarks || has('headPose'),
    ageAndGender: has('age', 'gender'),
    emotion: has('emotion', 'smile'),
    glasses: has('glasses', 'accessories', 'occlusion'),
    mask: has('accessories', 'mask', 'occlusion'),
    quality: has('blur', 'exposure', 'noise', 'qualityForRecognition'),
    hair: has('facialHair', 'hair'),
  };
}

/** Above this, a classifier's probability counts as "present". */
const PRESENT = 0.5;
/**
 * Glasses are reported only on faces at least GLASSES_MIN_WIDTH wide, and
 * only when a glasses classifier is this sure: at 60 px and above, over 0.9,
 * it called no bare face Sunglasses (docs/face.md).
 */
const GLASSES_SURE = 0.9;

/** The two glasses probabilities as they count: none on a face too small to tell. */
function glassesOf(face: MeasuredFace): GlassesProbabilities {
  const p = required(face.glasses, 'glasses');
  return face.rectangle.width < GLASSES_MIN_WIDTH ? { eyeglasses: 0, sunglasses: 0 } : p;
}
/**
 * facialHair and hair are answered only for faces at least this wide; a
 * narrower face gets zero confidences and `invisible: true` (the heads were
 * much worse on small faces when measured on CelebA).
 */
export const HAIR_MIN_WIDTH = 60;

/**
 * facialHair: each head's probability times P(male), which cut the beard
 * head's false positives on beardless darker-skinned faces (docs/face.md; the
 * heads file's card gives the rates the user measured).
 */
function facialHairOf(face: MeasuredFace): { moustache: number; beard: number; sideburns: number } {
  if (face.rectangle.width < HAIR_MIN_WIDTH) return { moustache: 0, beard: 0, sideburns: 0 };
  const p = required(face.hair, 'hair');
  const male = required(face.male, 'male');
  const gated = (head: 'moustache' | 'beard' | 'sideburns') => round(required(p[head], head) * male, 2);
  return { moustache: gated('moustache'), beard: gated('beard'), sideburns: gated('sideburns') };
}

/** hair: bald from its head, invisible when the hat head says a hat hides it (then no colours), colours most likely first. */
function hairOf(face: MeasuredFace): { bald: number; invisible: boolean; hairColor: { color: string; confidence: number }[] } {
  if (face.rectangle.width < HAIR_MIN_WIDTH) return { bald: 0, invisible: true, hairColor: [] };
  const p = required(face.hair, 'hair');
  const invisible = required(p.hat, 'hat') > PRESENT;
  const hairColor = invisible
    ? []
    : HAIR_COLOURS.flatMap((color) => (p[color] === undefined ? [] : [{ color, confidence: round(p[color], 2) }])).sort((a, b) => b.confidence - a.confidence);
  return { bald: round(required(p.bald, 'bald'), 2), invisible, hairColor };
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

/** v1.2's spelling of a v1.0 value: `NoGlasses` → `noGlasses`. */
const camel = (value: string) => value[0]!.toLowerCase() + value.slice(1);

/** `{blurLevel, value}`, `{noiseLevel, value}` or `{exposureLevel, value}`, value to two decimals. */
function measuredLevel(quality: QualityValues, attribute: 'blur' | 'noise' | 'exposure', spell: (value: string) => string): Record<string, string | number> {
  const value = round(quality[attribute], 2);
  return { [`${attribute}Level`]: spell(attribute === 'exposure' ? exposureLevelOf(value) : levelOf(value)), value };
}

/**
 * Whether a face is good enough to attempt recognition on, from what is
 * measured here: its size (the service asks for 200 px for the best results)
 * and the blur, noise and exposure of its pixels. No model of the service's
 * own judgement can be had; the rule is documented in docs/face.md.
 */
export function qualityForRecognition(width: number, quality: QualityValues): 'low' | 'medium' | 'high' {
  const blur = levelOf(quality.blur);
  const noise = levelOf(quality.noise);
  const exposure = exposureLevelOf(quality.exposure);
  if (width < 50 || blur === 'High' || noise === 'High' || exposure !== 'GoodExposure') return 'low';
  if (width >= 200 && blur === 'Low' && noise === 'Low') return 'high';
  return 'medium';
}

function required<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`measurement ${what} is missing`);
  return value;
}

/** faceAttributes of one face, only the requested attributes, in the reference's order and the version's spelling. */
export function faceAttributes(face: MeasuredFace, attributes: readonly FaceAttribute[], api: FaceApiProfile = FACE_V1_0): Record<string, unknown> {
  const spell = api.camelCaseValues ? camel : (value: string) => value;
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
      case 'facialHair':
        out.facialHair = facialHairOf(face);
        break;
      case 'hair':
        out.hair = hairOf(face);
        break;
      case 'glasses': {
        const p = glassesOf(face);
        out.glasses = spell(p.sunglasses > GLASSES_SURE ? 'Sunglasses' : p.eyeglasses > GLASSES_SURE ? 'ReadingGlasses' : 'NoGlasses');
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
        out[attribute] = measuredLevel(required(face.quality, 'quality'), attribute, spell);
        break;
      case 'occlusion':
        // Sunglasses hide the eyes and a mask the mouth, by the same classifiers and rules as glasses and mask;
        // nothing here sees a forehead covered (a hat, hair), so it is never reported occluded.
        out.occlusion = {
          foreheadOccluded: false,
          eyeOccluded: glassesOf(face).sunglasses > GLASSES_SURE,
          mouthOccluded: required(face.mask, 'mask') >= MASK_SURE,
        };
        break;
      case 'qualityForRecognition':
        out.qualityForRecognition = qualityForRecognition(face.rectangle.width, required(face.quality, 'quality'));
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
