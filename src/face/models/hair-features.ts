/**
 * What the facial-hair and hair heads read of a face: FaceRes's
 * 1,024-value descriptor, which already tells beards and baldness apart, and
 * the colours around the face, which tell the hair's colour and whether a hat
 * hides it. The colours are read on a square 1.8 times the detector's box,
 * sampled at 96 px: a 4 × 4 grid of cells, each its mean red, green and blue
 * and the spread of its luminance (0..1).
 */
import type { Region, RgbImage } from './image.ts';
import { sampleSquares, squareAround } from './square.ts';

/** Length of FaceRes's descriptor. */
export const DESCRIPTOR_LENGTH = 1024;
const REGION_CROP = { scale: 1.8, size: 96 } as const;
const GRID = 4;
const PER_CELL = 4;
export const REGION_FEATURES = GRID * GRID * PER_CELL;
/** Features per face: the descriptor, then the region statistics. */
export const FEATURE_LENGTH = DESCRIPTOR_LENGTH + REGION_FEATURES;

/** The region statistics of each face, REGION_FEATURES values each. */
export function regionStatistics(image: RgbImage, boxes: readonly Region[]): Float32Array[] {
  const { scale, size } = REGION_CROP;
  const pixels = sampleSquares(image, boxes.map((b) => squareAround(b, scale)), size);
  const cell = size / GRID;
  return boxes.map((_, n) => {
    const out = new Float32Array(REGION_FEATURES);
    const base = n * size * size * 3;
    for (let gy = 0; gy < GRID; gy++) {
      for (let gx = 0; gx < GRID; gx++) {
        let r = 0;
        let g = 0;
        let b = 0;
        let lum = 0;
        let lumSquares = 0;
        for (let y = gy * cell; y < (gy + 1) * cell; y++) {
          for (let x = gx * cell; x < (gx + 1) * cell; x++) {
            const at = base + (y * size + x) * 3;
            const [pr, pg, pb] = [pixels[at]! / 255, pixels[at + 1]! / 255, pixels[at + 2]! / 255];
            const l = 0.299 * pr + 0.587 * pg + 0.114 * pb;
            r += pr;
            g += pg;
            b += pb;
            lum += l;
            lumSquares += l * l;
          }
        }
        const count = cell * cell;
        const mean = lum / count;
        const o = (gy * GRID + gx) * PER_CELL;
        out[o] = r / count;
        out[o + 1] = g / count;
        out[o + 2] = b / count;
        out[o + 3] = Math.sqrt(Math.max(0, lumSquares / count - mean * mean));
      }
    }
    return out;
  });
}

/** One face's features: its descriptor, then its region statistics. */
export function hairFeatures(descriptor: Float32Array, regions: Float32Array): Float32Array {
  const out = new Float32Array(FEATURE_LENGTH);
  out.set(descriptor, 0);
  out.set(regions, DESCRIPTOR_LENGTH);
  return out;
}
