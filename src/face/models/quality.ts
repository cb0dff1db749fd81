/**
 * Blur, exposure and noise measured from the face's own pixels (no model):
 * - blur: variance of the Laplacian of the face scaled to 128×128 grey, so the
 *   figure is relative to the face, not the photo; sharp faces score near 0;
 * - exposure: mean luminance (Rec. 601) of the face, 0 black … 1 white;
 * - noise: Immerkær's estimate of the noise's standard deviation ("Fast
 *   Noise Variance Estimation", 1996) on the face at its own resolution.
 * Each value is 0..1; the levels use the real service's thresholds.
 */
import { cropResized, type Region, type RgbImage } from './image.ts';

const BLUR_SIZE = 128;
/** log10(Laplacian variance) of a crisp face is about this; 0 means no detail at all. */
const CRISP_LOG_VARIANCE = 3;
/** Noise standard deviation (grey levels) rated 1. */
const NOISE_SIGMA_AT_ONE = 20;
/** Largest window, per side, used for the noise estimate. */
const NOISE_WINDOW = 256;

export interface QualityValues {
  blur: number;
  exposure: number;
  noise: number;
}

export async function measureQuality(image: RgbImage, box: Region): Promise<QualityValues> {
  const scaled = await cropResized(image, box, BLUR_SIZE, BLUR_SIZE);
  const grey = luminance(scaled.data);
  const logVariance = Math.log10(1 + laplacianVariance(grey, BLUR_SIZE, BLUR_SIZE));
  return {
    blur: clamp01(1 - logVariance / CRISP_LOG_VARIANCE),
    exposure: clamp01(mean(grey) / 255),
    noise: clamp01(noiseSigma(image, box) / NOISE_SIGMA_AT_ONE),
  };
}

function luminance(rgb: Uint8Array): Float32Array {
  const out = new Float32Array(rgb.length / 3);
  for (let i = 0; i < out.length; i++) out[i] = 0.299 * rgb[i * 3]! + 0.587 * rgb[i * 3 + 1]! + 0.114 * rgb[i * 3 + 2]!;
  return out;
}

function mean(values: Float32Array): number {
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

function laplacianVariance(grey: Float32Array, width: number, height: number): number {
  const responses = new Float32Array((width - 2) * (height - 2));
  let n = 0;
  for (let y = 1; y < height - 1; y++) {
    for (let x = 1; x < width - 1; x++) {
      const i = y * width + x;
      responses[n++] = grey[i - 1]! + grey[i + 1]! + grey[i - width]! + grey[i + width]! - 4 * grey[i]!;
    }
  }
  const m = mean(responses);
  let sum = 0;
  for (const r of responses) sum += (r - m) ** 2;
  return sum / responses.length;
}

/** Immerkær: σ = √(π/2) / (6 (W−2)(H−2)) · Σ |I ∗ N| with N = [1 −2 1; −2 4 −2; 1 −2 1]. */
function noiseSigma(image: RgbImage, box: Region): number {
  const width = Math.min(NOISE_WINDOW, Math.floor(box.width));
  const height = Math.min(NOISE_WINDOW, Math.floor(box.height));
  if (width < 3 || height < 3) return 0;
  const left = Math.max(0, Math.round(box.left + (box.width - width) / 2));
  const top = Math.max(0, Math.round(box.top + (box.height - height) / 2));
  const w = Math.min(width, image.width - left);
  const h = Math.min(height, image.height - top);
  if (w < 3 || h < 3) return 0;
  const grey = new Float32Array(w * h);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const from = ((top + y) * image.width + left + x) * 3;
      grey[y * w + x] = 0.299 * image.data[from]! + 0.587 * image.data[from + 1]! + 0.114 * image.data[from + 2]!;
    }
  }
  let sum = 0;
  for (let y = 1; y < h - 1; y++) {
    for (let x = 1; x < w - 1; x++) {
      const i = y * w + x;
      const v =
        grey[i - w - 1]! - 2 * grey[i - w]! + grey[i - w + 1]! -
        2 * grey[i - 1]! + 4 * grey[i]! - 2 * grey[i + 1]! +
        grey[i + w - 1]! - 2 * grey[i + w]! + grey[i + w + 1]!;
      sum += Math.abs(v);
    }
  }
  return (Math.sqrt(Math.PI / 2) * sum) / (6 * (w - 2) * (h - 2));
}

function clamp01(x: number): number {
  return Math.min(1, Math.max(0, x));
}
