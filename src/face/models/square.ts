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
  const channel = (x: number, y: number, c: number) =>
    x < 0 || y < 0 || x >= width || y >= height ? 0 : data[(y * width + x) * 3 + c]!;
  for (const [n, square] of squares.entries()) {
    const step = square.side / size;
    const grid = Math.min(4, Math.max(1, Math.ceil(step)));
    const cos = Math.cos(square.angle);
    const sin = Math.sin(square.angle);
    const origin = fromSquare(square, size, 0, 0);
    let o = n * size * size * 3;
    for (let v = 0; v < size; v++) {
      for (let u = 0; u < size; u++) {
        let r = 0;
        let g = 0;
        let b = 0;
        for (let j = 0; j < grid; j++) {
          for (let i = 0; i < grid; i++) {
            const du = (u + (i + 0.5) / grid) * step;
            const dv = (v + (j + 0.5) / grid) * step;
            // Pixel centres are at integer + 0.5.
            const x = origin.x + du * cos - dv * sin - 0.5;
            const y = origin.y + du * sin + dv * cos - 0.5;
            const x0 = Math.floor(x);
            const y0 = Math.floor(y);
            const fx = x - x0;
            const fy = y - y0;
            const w00 = (1 - fx) * (1 - fy);
            const w10 = fx * (1 - fy);
            const w01 = (1 - fx) * fy;
            const w11 = fx * fy;
            r += w00 * channel(x0, y0, 0) + w10 * channel(x0 + 1, y0, 0) + w01 * channel(x0, y0 + 1, 0) + w11 * channel(x0 + 1, y0 + 1, 0);
            g += w00 * channel(x0, y0, 1) + w10 * channel(x0 + 1, y0, 1) + w01 * channel(x0, y0 + 1, 1) + w11 * channel(x0 + 1, y0 + 1, 1);
            b += w00 * channel(x0, y0, 2) + w10 * channel(x0 + 1, y0, 2) + w01 * channel(x0, y0 + 1, 2) + w11 * channel(x0 + 1, y0 + 1, 2);
          }
        }
        const samples = grid * grid;
        out[o++] = r / samples;
        out[o++] = g / samples;
        out[o++] = b / samples;
      }
    }
  }
  return out;
}
