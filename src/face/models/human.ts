/**
 * The per-face models that ship with @vladmandic/human — the face mesh,
 * HSE FaceRes (age, gender) and the 7-class emotion model — run straight from
 * their files, on square crops around our own detector's boxes, every face of
 * a photo in one batch per model: FaceRes and the emotion model translated to
 * ONNX at load and run by onnxruntime (onnx-graph.ts: several times faster
 * than TF.js's WebAssembly backend here), the mesh on that backend.
 *
 * human's own pipeline is not used: it finds each face again with BlazeFace
 * and drops the faces BlazeFace or the mesh cannot read, one face per call
 * (a 10-face photo came back with 3 faces, ~100 ms per face). Fed our
 * detector's crop, each model answers for every face.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import ort from 'onnxruntime-node';
import { fuseConvolutions } from './fuse.ts';
import { DESCRIPTOR_LENGTH } from './hair-features.ts';
import { onnxModel } from './onnx-graph.ts';
import { fileModelHandler, useWasmBackend } from '../../common/tfjs-files.ts';
import type { Region, RgbImage } from './image.ts';
import { fromSquare, sampleSquares, squareAround, type Square } from './square.ts';

const require = createRequire(import.meta.url);

/**
 * Each model's square crop: its side relative to the detector box's longer
 * side, and the model's input size. The sides were chosen by comparing, on
 * the faces of the test photos, each model's answer with human's own
 * pipeline (BlazeFace box × 1.4): see docs/face.md.
 */
const CROP = {
  description: { scale: 1.3, size: 224 },
  emotion: { scale: 1.2, size: 64 },
  mesh: { scale: 1.5, size: 192 },
} as const;
/** A face tilted more than this (radians) is measured again from a crop turned upright: the mesh model expects upright faces. */
const UPRIGHT_TOLERANCE = (10 * Math.PI) / 180;

export const EMOTIONS = ['angry', 'disgust', 'fear', 'happy', 'sad', 'surprise', 'neutral'] as const;
export type HumanEmotion = (typeof EMOTIONS)[number];

export interface Point {
  x: number;
  y: number;
}

export interface FaceMesh {
  /** The 468 points of the MediaPipe face mesh in image coordinates (z in the same unit, towards the camera negative). */
  points: { x: number; y: number; z: number }[];
  /** Degrees. */
  headPose: { roll: number; yaw: number; pitch: number };
}

/** What FaceRes says of one face: its age, its gender, and (when asked for) its 1,024-value descriptor. */
export interface FaceDescription {
  age: number;
  gender: 'male' | 'female';
  /** P(male), 0..1. */
  male: number;
  descriptor?: Float32Array;
}

/** The `model.json` of one of the models inside @vladmandic/human. */
export function humanModelFile(name: string): string {
  return join(dirname(dirname(require.resolve('@vladmandic/human'))), 'models', `${name}.json`);
}

/** FaceRes's outputs: P(male) [N, 1], the softmax over ages 0..99 [N, 100], the descriptor [N, 1024]. */
const FACERES_OUTPUTS = { male: 'gender_pred/Sigmoid', ages: 'age_pred/Softmax', descriptor: 'global_pooling/Mean' } as const;

/** The emotion model's output: the seven probabilities [N, 7]. */
const EMOTION_OUTPUT = 'Identity';

/**
 * One of human's models as onnxruntime runs it: its convolutions fused with
 * what follows them (FaceRes ships with its batch norms and ReLU6 unfused;
 * the emotion model is fused already), then written as ONNX.
 */
async function loadAsOnnx(name: string, outputs: readonly string[]): Promise<ort.InferenceSession> {
  const fused = await fuseConvolutions(await fileModelHandler(humanModelFile(name)).load!());
  // One thread: each model worker has a core of its own.
  return ort.InferenceSession.create(onnxModel(fused, outputs), { logSeverityLevel: 3, intraOpNumThreads: 1, interOpNumThreads: 1 });
}

export class HumanModels {
  private constructor(
    private readonly description: ort.InferenceSession,
    private readonly emotion: ort.InferenceSession,
    private readonly mesh: tf.GraphModel,
  ) {}

  /** Loads the three models, the mesh on the wasm backend (which it selects, for the mask model too). */
  static async load(): Promise<HumanModels> {
    await useWasmBackend();
    const [description, emotion, mesh] = await Promise.all([
      loadAsOnnx('faceres', Object.values(FACERES_OUTPUTS)),
      loadAsOnnx('emotion', [EMOTION_OUTPUT]),
      tf.loadGraphModel(fileModelHandler(humanModelFile('facemesh'))),
    ]);
    return new HumanModels(description, emotion, mesh);
  }

  /** Age (years) and gender of each face from HSE FaceRes, and its descriptor when `withDescriptor`. */
  async describe(image: RgbImage, boxes: readonly Region[], withDescriptor: boolean): Promise<FaceDescription[]> {
    if (boxes.length === 0) return [];
    const { scale, size } = CROP.description;
    const pixels = sampleSquares(image, boxes.map((b) => squareAround(b, scale)), size);
    const input = new ort.Tensor('float32', pixels, [boxes.length, size, size, 3]);
    const outputs = await this.description.run({ [this.description.inputNames[0]!]: input });
    const male = outputs[FACERES_OUTPUTS.male]!.data as Float32Array;
    const ages = outputs[FACERES_OUTPUTS.ages]!.data as Float32Array;
    const descriptors = withDescriptor ? (outputs[FACERES_OUTPUTS.descriptor]!.data as Float32Array) : undefined;
    return boxes.map((_, n) => ({
      age: ageOf(ages.subarray(n * 100, (n + 1) * 100)),
      gender: male[n]! > 0.5 ? 'male' : 'female',
      male: male[n]!,
      ...(descriptors ? { descriptor: descriptors.slice(n * DESCRIPTOR_LENGTH, (n + 1) * DESCRIPTOR_LENGTH) } : {}),
    }));
  }

  /** The seven emotion probabilities of each face. */
  async emotions(image: RgbImage, boxes: readonly Region[]): Promise<Record<HumanEmotion, number>[]> {
    if (boxes.length === 0) return [];
    const { scale, size } = CROP.emotion;
    const rgb = sampleSquares(image, boxes.map((b) => squareAround(b, scale)), size);
    // The model reads grey (Rec. 601 weights) scaled to −1..1.
    const grey = new Float32Array(rgb.length / 3);
    for (let i = 0; i < grey.length; i++) {
      grey[i] = ((0.2989 * rgb[i * 3]! + 0.587 * rgb[i * 3 + 1]! + 0.114 * rgb[i * 3 + 2]!) / 255 - 0.5) * 2;
    }
    const input = new ort.Tensor('float32', grey, [boxes.length, size, size, 1]);
    const scores = (await this.emotion.run({ [this.emotion.inputNames[0]!]: input }))[EMOTION_OUTPUT]!.data as Float32Array;
    return boxes.map((_, n) => Object.fromEntries(EMOTIONS.map((name, i) => [name, scores[n * EMOTIONS.length + i]!])) as Record<HumanEmotion, number>);
  }

  /**
   * The face mesh and head pose of each face. A face found tilted is measured
   * a second time from a crop turned by its tilt (all such faces in one batch).
   */
  async meshes(image: RgbImage, boxes: readonly Region[]): Promise<FaceMesh[]> {
    if (boxes.length === 0) return [];
    const squares = boxes.map((b) => squareAround(b, CROP.mesh.scale));
    const first = await this.runMesh(image, squares);
    const tilted = first.flatMap((mesh, n) => (Math.abs(rollOf(mesh)) > UPRIGHT_TOLERANCE ? [n] : []));
    const turned = tilted.map((n) => ({ ...squares[n]!, angle: rollOf(first[n]!) }));
    const second = await this.runMesh(image, turned);
    tilted.forEach((n, i) => (first[n] = second[i]!));
    return first.map((points) => ({ points, headPose: headPoseOf(points) }));
  }

  private async runMesh(image: RgbImage, squares: readonly Square[]): Promise<FaceMesh['points'][]> {
    if (squares.length === 0) return [];
    const { size } = CROP.mesh;
    const pixels = sampleSquares(image, squares, size);
    for (let i = 0; i < pixels.length; i++) pixels[i]! /= 255;
    const input = tf.tensor4d(pixels, [squares.length, size, size, 3]);
    const outputs = this.mesh.execute(input) as tf.Tensor[];
    input.dispose();
    const coordinates = await outputs.find((t) => t.shape[t.shape.length - 1] === 1404)!.data();
    tf.dispose(outputs);
    return squares.map((square, n) => {
      const points: FaceMesh['points'] = [];
      for (let p = 0; p < 468; p++) {
        const at = (n * 468 + p) * 3;
        const { x, y } = fromSquare(square, size, coordinates[at]!, coordinates[at + 1]!);
        points.push({ x, y, z: (coordinates[at + 2]! * square.side) / size });
      }
      return points;
    });
  }
}

/**
 * The age of FaceRes's distribution over 0..99 years: the mean of the five
 * years around its most likely one. The mean of the whole distribution
 * drags every uncertain face towards the population's middle (about 30);
 * the most likely year alone jumps between neighbours.
 */
export function ageOf(p: Float32Array): number {
  let best = 0;
  for (let i = 1; i < p.length; i++) if (p[i]! > p[best]!) best = i;
  let sum = 0;
  let weight = 0;
  for (let i = Math.max(0, best - 2); i <= Math.min(p.length - 1, best + 2); i++) {
    sum += i * p[i]!;
    weight += p[i]!;
  }
  return sum / weight;
}

/** Outer eye corners of the mesh: 33 on the image's left, 263 on its right (MediaPipe numbering). */
const EYE_LEFT_OUTER = 33;
const EYE_RIGHT_OUTER = 263;
const FOREHEAD = 10;
const CHIN = 152;

function rollOf(points: FaceMesh['points']): number {
  const a = points[EYE_LEFT_OUTER]!;
  const b = points[EYE_RIGHT_OUTER]!;
  return Math.atan2(b.y - a.y, b.x - a.x);
}

/**
 * Roll, yaw and pitch (degrees) of the face's frame in the mesh: its x axis
 * runs from eye corner to eye corner, its y axis from forehead to chin.
 * Roll is the eye line's turn in the picture (clockwise positive); yaw and
 * pitch are how far those axes point towards or away from the camera.
 */
function headPoseOf(points: FaceMesh['points']): FaceMesh['headPose'] {
  const axis = (from: number, to: number) => {
    const a = points[from]!;
    const b = points[to]!;
    const v = { x: b.x - a.x, y: b.y - a.y, z: b.z - a.z };
    const length = Math.hypot(v.x, v.y, v.z) || 1;
    return { x: v.x / length, y: v.y / length, z: v.z / length };
  };
  const across = axis(EYE_LEFT_OUTER, EYE_RIGHT_OUTER);
  const down = axis(FOREHEAD, CHIN);
  const degrees = (radians: number) => (radians * 180) / Math.PI;
  return {
    roll: degrees(Math.atan2(across.y, across.x)),
    yaw: degrees(Math.asin(Math.max(-1, Math.min(1, across.z)))),
    pitch: degrees(Math.asin(Math.max(-1, Math.min(1, -down.z)))),
  };
}
