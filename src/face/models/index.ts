/**
 * Every model of the face container, loaded once per worker thread, and the
 * one function that turns an image into measured faces.
 */
import { FaceDetector, type Detection, type DetectorPass } from './detector.ts';
import { GLASSES_MIN_WIDTH, GlassesClassifier, type GlassesProbabilities } from './glasses.ts';
import { HairHeads, type HeadScores, type HeadsFile } from '../hair/heads.ts';
import { hairFeatures, regionStatistics } from './hair-features.ts';
import { HumanModels, type FaceDescription, type HumanEmotion } from './human.ts';
import { landmarksFromMesh, type FaceLandmarks } from './landmarks.ts';
import { MaskDetector } from './mask.ts';
import { measureQuality, type QualityValues } from './quality.ts';
import { routeFileUrlsToDisk } from '../../common/tfjs-files.ts';
import type { Region, RgbImage } from './image.ts';

export interface ModelPaths {
  detector: string;
  eyeglasses: string;
  sunglasses: string;
  mask: string;
}

/** What a model worker loads: the model files and, when the user trained them, the hair heads. */
export interface ModelSet {
  paths: ModelPaths;
  hairHeads: HeadsFile | null;
}

/** What a request needs measured, beyond the rectangles: each model runs only when asked. */
export interface Measurements {
  /** The face mesh: landmarks and head pose. */
  mesh: boolean;
  ageAndGender: boolean;
  emotion: boolean;
  glasses: boolean;
  mask: boolean;
  quality: boolean;
  /** FaceRes's descriptor and the region colours, through the hair heads (facialHair, hair). */
  hair: boolean;
}

export interface MeasuredFace {
  rectangle: Region;
  landmarks?: FaceLandmarks;
  /** Degrees. */
  headPose?: { roll: number; yaw: number; pitch: number };
  age?: number;
  gender?: 'male' | 'female';
  /** P(male) from FaceRes, with `hair`. */
  male?: number;
  hair?: HeadScores;
  emotion?: Record<HumanEmotion, number>;
  glasses?: GlassesProbabilities;
  mask?: number;
  quality?: QualityValues;
}

/** Faces per model call: every face of a photo in a few calls, the tensors of one call a few tens of MB at most. */
const BATCH = 16;

async function inBatches<T>(boxes: readonly Region[], measure: (batch: Region[]) => Promise<T[]>): Promise<T[]> {
  const out: T[] = [];
  for (let start = 0; start < boxes.length; start += BATCH) out.push(...(await measure(boxes.slice(start, start + BATCH))));
  return out;
}

export class FaceModels {
  private constructor(
    private readonly detector: FaceDetector,
    private readonly human: HumanModels,
    private readonly glasses: GlassesClassifier,
    private readonly masks: MaskDetector,
    private readonly hairHeads: HairHeads | null,
  ) {}

  static async load(paths: ModelPaths, hairHeads: HeadsFile | null = null): Promise<FaceModels> {
    routeFileUrlsToDisk();
    const human = await HumanModels.load();
    // After human's models: their loader selects and initialises the wasm backend the mask model runs on.
    const [detector, glasses, masks] = await Promise.all([
      FaceDetector.load(paths.detector),
      GlassesClassifier.load(paths.eyeglasses, paths.sunglasses),
      MaskDetector.load(paths.mask),
    ]);
    return new FaceModels(detector, human, glasses, masks, hairHeads ? new HairHeads(hairHeads) : null);
  }

  /** The faces the detector keeps, largest first, at most maxFaces: its passes one after the other in this thread. */
  async detect(image: RgbImage, maxFaces: number): Promise<Region[]> {
    const found = await this.detector.detect(image);
    return found.slice(0, maxFaces).map((d) => ({ left: d.left, top: d.top, width: d.width, height: d.height }));
  }

  /** What one detector pass finds (the container deals an image's passes to its workers). */
  find(image: RgbImage, pass: DetectorPass): Promise<Detection[]> {
    return this.detector.find(image, pass);
  }

  /**
   * Measures every given face with what is wanted: each model once per batch
   * of faces, never a face left out (a model reads the detector's crop of
   * each face, however small or turned; docs/face.md says below which sizes
   * an attribute is less reliable). The glasses classifiers run only on faces
   * at least `glassesFromWidth` wide (the API answers NoGlasses below it);
   * the others read 0.
   */
  async measure(image: RgbImage, boxes: readonly Region[], wanted: Measurements, glassesFromWidth = GLASSES_MIN_WIDTH): Promise<MeasuredFace[]> {
    const faces: MeasuredFace[] = boxes.map((rectangle) => ({ rectangle }));
    // Started first: the glasses crops are cut by sharp in libuv's threads while the other models run here.
    const glasses = wanted.glasses ? this.classifyGlasses(image, boxes, glassesFromWidth) : Promise.resolve([]);
    if (wanted.mesh) {
      const meshes = await inBatches(boxes, (batch) => this.human.meshes(image, batch));
      meshes.forEach((mesh, i) => Object.assign(faces[i]!, { landmarks: landmarksFromMesh(mesh.points), headPose: mesh.headPose }));
    }
    if (wanted.hair) {
      const heads = this.hairHeads;
      if (!heads) throw new Error('hair was asked of a worker without hair heads');
      (await this.hairFeatures(image, boxes)).forEach(({ age, gender, male, features }, i) =>
        Object.assign(faces[i]!, { age, gender, male, hair: heads.score(features) }),
      );
    } else if (wanted.ageAndGender) {
      const described = await inBatches(boxes, (batch) => this.human.describe(image, batch, false));
      described.forEach(({ age, gender }, i) => Object.assign(faces[i]!, { age, gender }));
    }
    if (wanted.emotion) (await inBatches(boxes, (batch) => this.human.emotions(image, batch))).forEach((emotion, i) => (faces[i]!.emotion = emotion));
    if (wanted.mask) (await inBatches(boxes, (batch) => this.masks.maskProbabilities(image, batch))).forEach((p, i) => (faces[i]!.mask = p));
    if (wanted.quality) for (const face of faces) face.quality = await measureQuality(image, face.rectangle);
    (await glasses).forEach((p, i) => (faces[i]!.glasses = p));
    return faces;
  }

  private async classifyGlasses(image: RgbImage, boxes: readonly Region[], fromWidth: number): Promise<GlassesProbabilities[]> {
    const wide = boxes.filter((box) => box.width >= fromWidth);
    const classified = await inBatches(wide, (batch) => this.glasses.classify(image, batch));
    let next = 0;
    return boxes.map((box) => (box.width >= fromWidth ? classified[next++]! : { eyeglasses: 0, sunglasses: 0 }));
  }

  /** FaceRes's answer for each face, with the features the hair heads read (FEATURE_LENGTH values). */
  async hairFeatures(image: RgbImage, boxes: readonly Region[]): Promise<(FaceDescription & { features: Float32Array })[]> {
    const described = await inBatches(boxes, (batch) => this.human.describe(image, batch, true));
    const regions = regionStatistics(image, boxes);
    return described.map(({ descriptor, ...rest }, i) => ({ ...rest, features: hairFeatures(descriptor!, regions[i]!) }));
  }
}
