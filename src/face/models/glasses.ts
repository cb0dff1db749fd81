/**
 * Glasses from mantasu/glasses-detector's two small binary classifiers
 * (ONNX): one for transparent eyeglasses, one for sunglasses. Neither can
 * tell swimming goggles, so that value is never produced.
 */
import ort from 'onnxruntime-node';
import { cropResized, type Region, type RgbImage } from './image.ts';

const SIZE = 256;
const MEAN = [0.485, 0.456, 0.406];
const STD = [0.229, 0.224, 0.225];
/** The classifiers were trained on face crops with about this much margin. */
const MARGIN = 0.2;

/**
 * Glasses are reported only on faces at least this many pixels wide.
 * Measured on known faces shrunk and re-embedded (docs/face.md, "Reliability
 * by face size"): below 60 px the sunglasses classifier calls bare faces
 * Sunglasses (7 % at 40 px, 13 % at 32 px, 56 % at 20 px), so smaller faces
 * get the real service's default, NoGlasses, and the classifiers need not
 * run on them.
 */
export const GLASSES_MIN_WIDTH = 60;

export interface GlassesProbabilities {
  eyeglasses: number;
  sunglasses: number;
}

export class GlassesClassifier {
  private constructor(
    private readonly eyeglasses: ort.InferenceSession,
    private readonly sunglasses: ort.InferenceSession,
  ) {}

  static async load(eyeglassesPath: string, sunglassesPath: string): Promise<GlassesClassifier> {
    const options = { logSeverityLevel: 3 as const, intraOpNumThreads: 1, interOpNumThreads: 1 };
    return new GlassesClassifier(
      await ort.InferenceSession.create(eyeglassesPath, options),
      await ort.InferenceSession.create(sunglassesPath, options),
    );
  }

  async classify(image: RgbImage, boxes: Region[]): Promise<GlassesProbabilities[]> {
    if (boxes.length === 0) return [];
    const plane = SIZE * SIZE;
    const batch = new Float32Array(boxes.length * 3 * plane);
    for (const [n, box] of boxes.entries()) {
      const crop = await cropResized(image, withMargin(box, MARGIN), SIZE, SIZE);
      for (let i = 0; i < plane; i++) {
        for (let c = 0; c < 3; c++) batch[(n * 3 + c) * plane + i] = (crop.data[i * 3 + c]! / 255 - MEAN[c]!) / STD[c]!;
      }
    }
    const input = new ort.Tensor('float32', batch, [boxes.length, 3, SIZE, SIZE]);
    const [eye, sun] = await Promise.all([this.eyeglasses.run({ input }), this.sunglasses.run({ input })]);
    const eyeLogits = eye.logit!.data as Float32Array;
    const sunLogits = sun.logit!.data as Float32Array;
    return boxes.map((_, n) => ({ eyeglasses: sigmoid(eyeLogits[n]!), sunglasses: sigmoid(sunLogits[n]!) }));
  }
}

export function withMargin(box: Region, margin: number): Region {
  return {
    left: box.left - box.width * margin,
    top: box.top - box.height * margin,
    width: box.width * (1 + 2 * margin),
    height: box.height * (1 + 2 * margin),
  };
}

function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}
