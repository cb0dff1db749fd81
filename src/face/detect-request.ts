/**
 * The query options of POST /face/v1.x/detect, as the official clients send
 * them (the v1.0 client every one, with its defaults), validated as the
 * reference does.
 */
import { FACE_V1_0, parseAttributeList, type FaceApiProfile, type FaceAttribute, type UnsupportedAttributes } from './attributes.ts';
import { badArgument } from './errors.ts';

export const RECOGNITION_MODELS = ['recognition_01', 'recognition_02', 'recognition_03', 'recognition_04'] as const;
export const DETECTION_MODELS = ['detection_01', 'detection_02', 'detection_03'] as const;
const TTL_MIN = 60;
const TTL_MAX = 86400;

export interface DetectOptions {
  returnFaceId: boolean;
  returnFaceLandmarks: boolean;
  /** The supported attributes asked for, in response order. */
  attributes: FaceAttribute[];
  /** Whether returnFaceAttributes named any attribute (faceAttributes then appears, even if all were omitted). */
  attributesRequested: boolean;
  recognitionModel: string;
  returnRecognitionModel: boolean;
  detectionModel: string;
  faceIdTimeToLive: number;
  api: FaceApiProfile;
}

type Query = Record<string, string | string[] | undefined>;

/** Query names are matched without regard to case, as ASP.NET (the real container) does. */
function lookup(query: Query, name: string): string | undefined {
  const key = Object.keys(query).find((k) => k.toLowerCase() === name.toLowerCase());
  const value = key === undefined ? undefined : query[key];
  if (Array.isArray(value)) throw badArgument(`Argument ${name} is given more than once.`);
  return value;
}

function flag(query: Query, name: string, fallback: boolean): boolean {
  const value = lookup(query, name);
  if (value === undefined || value === '') return fallback;
  if (/^true$/i.test(value)) return true;
  if (/^false$/i.test(value)) return false;
  throw badArgument(`Argument ${name} is not valid.`);
}

function choice(query: Query, name: string, choices: readonly string[], fallback: string): string {
  const value = lookup(query, name);
  if (value === undefined || value === '') return fallback;
  const found = choices.find((c) => c === value.toLowerCase());
  if (!found) throw badArgument(`'${name}' is invalid.`);
  return found;
}

/** Recognition models whose features qualityForRecognition judges, as the service documents. */
const QUALITY_RECOGNITION_MODELS = ['recognition_03', 'recognition_04'];

export function parseDetectOptions(query: Query, unsupported: UnsupportedAttributes, api: FaceApiProfile = FACE_V1_0): DetectOptions {
  const detectionModel = choice(query, 'detectionModel', DETECTION_MODELS, 'detection_01');
  const returnFaceLandmarks = flag(query, 'returnFaceLandmarks', false);
  if (returnFaceLandmarks && detectionModel === 'detection_02') {
    throw badArgument('Landmarks are not supported by detection model detection_02.');
  }
  const ttlText = lookup(query, 'faceIdTimeToLive') || String(TTL_MAX);
  const faceIdTimeToLive = Number(ttlText);
  if (!/^\d{1,6}$/.test(ttlText) || faceIdTimeToLive < TTL_MIN || faceIdTimeToLive > TTL_MAX) {
    throw badArgument('Argument faceIdTimeToLive is invalid.');
  }
  const attributeList = lookup(query, 'returnFaceAttributes') ?? '';
  const attributes = parseAttributeList(attributeList, detectionModel, unsupported, api);
  const recognitionModel = choice(query, 'recognitionModel', RECOGNITION_MODELS, 'recognition_01');
  if (attributes.includes('qualityForRecognition') && !QUALITY_RECOGNITION_MODELS.includes(recognitionModel)) {
    throw badArgument(`Attribute qualityForRecognition is only supported with recognitionModel ${QUALITY_RECOGNITION_MODELS.join(' or ')}.`);
  }
  return {
    returnFaceId: flag(query, 'returnFaceId', true),
    returnFaceLandmarks,
    attributes,
    attributesRequested: attributeList.trim() !== '',
    recognitionModel,
    returnRecognitionModel: flag(query, 'returnRecognitionModel', false),
    detectionModel,
    faceIdTimeToLive,
    api,
  };
}
