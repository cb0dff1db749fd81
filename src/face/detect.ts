/**
 * Detect (Face v1.0 and v1.2): an image in, the faces found in it out, largest first,
 * at most MAX_FACES, each with only what the request asked for.
 */
import { randomUUID } from 'node:crypto';
import { faceAttributes, measurementsFor } from './attributes.ts';
import type { DetectOptions } from './detect-request.ts';
import { imageTooBig, imageTooSmall } from './errors.ts';
import type { MeasuredFace } from './models/index.ts';
import type { ModelPool } from './pool.ts';

export const MAX_FACES = 100;
export const MIN_IMAGE_BYTES = 1024;
export const MAX_IMAGE_BYTES = 6 * 1024 * 1024;

export interface FaceRectangle {
  top: number;
  left: number;
  width: number;
  height: number;
}

export interface DetectedFace {
  faceId?: string;
  recognitionModel?: string;
  faceRectangle: FaceRectangle;
  faceLandmarks?: Record<string, { x: number; y: number }>;
  faceAttributes?: Record<string, unknown>;
}

export function checkImageSize(bytes: Uint8Array): void {
  if (bytes.length < MIN_IMAGE_BYTES) throw imageTooSmall();
  if (bytes.length > MAX_IMAGE_BYTES) throw imageTooBig();
}

function toWire(face: MeasuredFace, options: DetectOptions): DetectedFace {
  const r = face.rectangle;
  const out: DetectedFace = {
    // faceIds name no stored face here (detect is the only operation), so a fresh GUID is all they need to be.
    ...(options.returnFaceId ? { faceId: randomUUID() } : {}),
    ...(options.returnRecognitionModel ? { recognitionModel: options.recognitionModel } : {}),
    faceRectangle: { top: Math.round(r.top), left: Math.round(r.left), width: Math.round(r.width), height: Math.round(r.height) },
  };
  if (options.returnFaceLandmarks) {
    const landmarks = face.landmarks;
    if (!landmarks) throw new Error('landmarks were not measured');
    out.faceLandmarks = Object.fromEntries(Object.entries(landmarks).map(([name, p]) => [name, { x: Number(p.x.toFixed(1)), y: Number(p.y.toFixed(1)) }]));
  }
  if (options.attributesRequested) out.faceAttributes = faceAttributes(face, options.attributes, options.api);
  return out;
}

export async function detectFaces(pool: ModelPool, image: Uint8Array, options: DetectOptions): Promise<DetectedFace[]> {
  checkImageSize(image);
  const measured = await pool.measure(image, measurementsFor(options.attributes, options.returnFaceLandmarks), MAX_FACES);
  const faces = measured.faces.map((face) => toWire(face, options));
  // Largest first by the rectangles as sent: rounding can swap two faces of nearly equal size.
  const area = (f: DetectedFace) => f.faceRectangle.width * f.faceRectangle.height;
  return faces.sort((a, b) => area(b) - area(a));
}
