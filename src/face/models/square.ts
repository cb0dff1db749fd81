/**
 * Square face crops for the per-face models, sampled straight from the
 * decoded pixels in one pass per face (no image library round trip), so that
 * every face of a photo can go to a model as one batch. A square may be
 * turned (to stand a tilted face upright for the mesh) and may reach past the
 * image's borders, where it is black.
 */
import type { Region, RgbImage } from './image.ts';

/** A square of the image: its centre, its side and its turn (radians, clockwise in image coordinates). */
export interface Square {
  cx: number;
  cy: number;
  side: number;
  angle: number;
}

/** The square around a detector box, `scale` times its longer side. */
export function squareAround(box: Region, scale: number, angle = 0): Square {
  return { cx: box.left + box.width / 2, cy: box.top + box.height / 2, side: Math.max(box.width, box.height) * scale, angle };
}

/** The image point at (u, v) of a square sampled at `size` pixels, u and v in 0..size. */
export function fromSquare(square: Square, size: number, u: number, v: number): { x: number; y: number } {
  const scale = square.side / size;
  const dx = (u - size / 2) * scale;
  const dy = (v - size / 2) * scale;
  const cos = Math.cos(square.angle);
  const sin = Math.sin(square.angle);
  return { x: square.cx + dx * cos - dy * sin, y: square.cy + dx * sin + dy * cos };
}

/**
 * RGB values 0..255 of each square at size × size, one after the other
 * (N × size × size × 3, channels last). A square wider than the output is
 * averaged over a grid of bilinear samples per output pixel, so that a large
 * face shrinks without aliasing as a plain resampling would.
 */
export function sampleSquares(image: RgbImage, squares: readonly Square[], size: number): Float32Array {
  const out = new Float32Array(squares.length * size * size * 3);
  const { data, width, height } = image;
  const stride = width * 3;
  // Outside the image is black; only samples at the border take this path.
  const channel = (x: number, y: number, c: number) => (x < 0 || y < 0 || x >= width || y >= height ? 0 : data[y * stride + x * 3 + c]!);
  let o = 0;
  for (const square of squares) {
    const step = square.side / size;
    const grid = Math.min(4, Math.max(1, Math.ceil(step)));
    const samples = grid * grid;
    // One output pixel to the right moves the samples by (ux, uy) in the image, one down by (vx, vy).
    const ux = step * Math.cos(square.angle);
    const uy = step * Math.sin(square.angle);
    const vx = -uy;
    const vy = ux;
    // Pixel centres are at integer + 0.5.
    const origin = fromSquare(square, size, 0, 0);
    const ox = origin.x - 0.5;
    const oy = origin.y - 0.5;
    for (let v = 0; v < size; v++) {
      for (let u = 0; u < size; u++) {
        let r = 0;
        let g = 0;
        let b = 0;
        for (let j = 0; j < grid; j++) {
          const dv = v + (j + 0.5) / grid;
          for (let i = 0; i < grid; i++) {
            const du = u + (i + 0.5) / grid;
            const x = ox + du * ux + dv * vx;
            const y = oy + du * uy + dv * vy;
            const x0 = Math.floor(x);
            const y0 = Math.floor(y);
            const fx = x - x0;
            const fy = y - y0;
            const w00 = (1 - fx) * (1 - fy);
            const w10 = fx * (1 - fy);
            const w01 = (1 - fx) * fy;
            const w11 = fx * fy;
            if (x0 >= 0 && y0 >= 0 && x0 + 1 < width && y0 + 1 < height) {
              // The four neighbours are inside: read them straight from the row-major RGB bytes.
              const a = y0 * stride + x0 * 3;
              const c = a + stride;
              r += w00 * data[a]! + w10 * data[a + 3]! + w01 * data[c]! + w11 * data[c + 3]!;
              g += w00 * data[a + 1]! + w10 * data[a + 4]! + w01 * data[c + 1]! + w11 * data[c + 4]!;
              b += w00 * data[a + 2]! + w10 * data[a + 5]! + w01 * data[c + 2]! + w11 * data[c + 5]!;
            } else {
              r += w00 * channel(x0, y0, 0) + w10 * channel(x0 + 1, y0, 0) + w01 * channel(x0, y0 + 1, 0) + w11 * channel(x0 + 1, y0 + 1, 0);
              g += w00 * channel(x0, y0, 1) + w10 * channel(x0 + 1, y0, 1) + w01 * channel(x0, y0 + 1, 1) + w11 * channel(x0 + 1, y0 + 1, 1);
              b += w00 * channel(x0, y0, 2) + w10 * channel(x0 + 1, y0, 2) + w01 * channel(x0, y0 + 1, 2) + w11 * channel(x0 + 1, y0 + 1, 2);
            }
          }
        }
        out[o++] = r / samples;
        out[o++] = g / samples;
        out[o++] = b / samples;
      }
    }
  }
  return out;
}
