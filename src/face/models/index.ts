/**
 * Every model of the face container, loaded once per worker thread, and the
 * one function that turns an image into measured faces.
 */
import { FaceDetector } from './detector.ts';
import { GlassesClassifier, type GlassesProbabilities } from './glasses.ts';
import { HumanAnalyzer, type AnalysisParts, type FaceAnalysis } from './human.ts';
import { MaskDetector } from './mask.ts';
import { measureQuality, type QualityValues } from './quality.ts';
import { routeFileUrlsToDisk } from './tfjs-files.ts';
import type { Region, RgbImage } from './image.ts';

export interface ModelPaths {
  detector: string;
  eyeglasses: string;
  sunglasses: string;
  mask: string;
}

/** What a request needs measured, beyond the rectangles. */
export interface Measurements {
  /** Mesh and head pose, and the parts asked for (one @vladmandic/human pass); null for none. */
  analysis: AnalysisParts | null;
  glasses: boolean;
  mask: boolean;
  quality: boolean;
}

export interface MeasuredFace {
  rectangle: Region;
  analysis?: FaceAnalysis;
  glasses?: GlassesProbabilities;
  mask?: number;
  quality?: QualityValues;
}

export class FaceModels {
  private constructor(
    private readonly detector: FaceDetector,
    private readonly human: HumanAnalyzer,
    private readonly glasses: GlassesClassifier,
    private readonly masks: MaskDetector,
  ) {}

  static async load(paths: ModelPaths): Promise<FaceModels> {
    routeFileUrlsToDisk();
    const human = await HumanAnalyzer.load();
    // After human: it selects and initialises the wasm backend the mask model runs on.
    const [detector, glasses, masks] = await Promise.all([
      FaceDetector.load(paths.detector),
      GlassesClassifier.load(paths.eyeglasses, paths.sunglasses),
      MaskDetector.load(paths.mask),
    ]);
    return new FaceModels(detector, human, glasses, masks);
  }

  /**
   * The faces of the image (or of the given rectangles, found earlier),
   * largest first, at most maxFaces. When an analysis is asked for, a face the
   * mesh model cannot read is left out rather than given values no model
   * produced.
   */
  async measure(image: RgbImage, wanted: Measurements, maxFaces: number, rectangles?: Region[]): Promise<MeasuredFace[]> {
    const found = rectangles ?? (await this.detector.detect(image)).map((d) => ({ left: d.left, top: d.top, width: d.width, height: d.height }));
    let faces: MeasuredFace[] = found.map((rectangle) => ({ rectangle }));
    if (wanted.analysis) {
      const analysed: MeasuredFace[] = [];
      for (const face of faces) {
        if (analysed.length === maxFaces) break;
        const analysis = await this.human.analyze(image, face.rectangle, wanted.analysis);
        if (analysis) analysed.push({ ...face, analysis });
      }
      faces = analysed;
    }
    faces = faces.slice(0, maxFaces);
    const boxes = faces.map((f) => f.rectangle);
    if (wanted.glasses) {
      const probabilities = await this.glasses.classify(image, boxes);
      faces.forEach((f, i) => (f.glasses = probabilities[i]));
    }
    if (wanted.mask) {
      const probabilities = await this.masks.maskProbabilities(image, boxes);
      faces.forEach((f, i) => (f.mask = probabilities[i]));
    }
    if (wanted.quality) {
      for (const face of faces) face.quality = await measureQuality(image, face.rectangle);
    }
    return faces;
  }
}
