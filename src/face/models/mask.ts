/**
 * Face masks from AIZOOTech's FaceMaskDetection (a TF.js layers SSD whose two
 * classes are "face with mask" and "face without mask"), run on each face
 * crop: P(mask) is the mask score of the anchor the model is surest about.
 */
import * as tf from '@tensorflow/tfjs';
import { fileModelHandler } from '../../common/tfjs-files.ts';
import { cropResized, type Region, type RgbImage } from './image.ts';
import { withMargin } from './glasses.ts';

const SIZE = 260;
const MARGIN = 0.1;

export class MaskDetector {
  private constructor(private readonly model: tf.LayersModel) {}

  static async load(modelJsonPath: string): Promise<MaskDetector> {
    return new MaskDetector(await tf.loadLayersModel(fileModelHandler(modelJsonPath)));
  }

  /** P(the face wears a mask) for each box. */
  async maskProbabilities(image: RgbImage, boxes: Region[]): Promise<number[]> {
    if (boxes.length === 0) return [];
    const pixels = new Float32Array(boxes.length * SIZE * SIZE * 3);
    for (const [n, box] of boxes.entries()) {
      const crop = await cropResized(image, withMargin(box, MARGIN), SIZE, SIZE);
      const offset = n * SIZE * SIZE * 3;
      for (let i = 0; i < crop.data.length; i++) pixels[offset + i] = crop.data[i]! / 255;
    }
    const classes = tf.tidy(() => {
      const outputs = this.model.predict(tf.tensor4d(pixels, [boxes.length, SIZE, SIZE, 3])) as tf.Tensor[];
      // Outputs are [box offsets, class scores]; only the classes matter here.
      return outputs[1]!.clone();
    });
    const scores = (await classes.data()) as Float32Array;
    const anchors = classes.shape[1]!;
    classes.dispose();
    return boxes.map((_, n) => {
      let best = -1;
      let mask = 0;
      for (let a = 0; a < anchors; a++) {
        const withMask = scores[(n * anchors + a) * 2]!;
        const without = scores[(n * anchors + a) * 2 + 1]!;
        if (Math.max(withMask, without) > best) {
          best = Math.max(withMask, without);
          mask = withMask;
        }
      }
      return mask;
    });
  }
}
