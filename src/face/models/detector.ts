/**
 * Face detection with Ultra-Light-Fast-Generic-Face-Detector (RFB-640, ONNX).
 * Chosen over @vladmandic/human's BlazeFace by measurement (2 shared cores):
 * on the 1920×954 contact sheet of ~114 faces RFB-640 finds 110 in 0.1–0.3 s
 * (RFB-320: 90), BlazeFace 118 boxes in 7.5 s; on an 800×165 strip of five
 * faces BlazeFace, which squeezes the whole image into a square, finds none
 * and the letterboxed RFB all five.
 */
import ort from 'onnxruntime-node';
import { cropResized, fitInside, type Region, type RgbImage } from './image.ts';

const INPUT_WIDTH = 640;
const INPUT_HEIGHT = 480;
/** Upstream's recommended operating point. */
const SCORE_THRESHOLD = 0.7;
const NMS_IOU = 0.3;
/** A box this much inside a surer one is the same face seen twice (whole pass and a tile). */
const CONTAINED = 0.7;
/** Tiles are this many times the model input, so their faces shrink by 1/TILE_ZOOM only. */
const TILE_ZOOM = 1.5;

export interface Detection extends Region {
  score: number;
}

export class FaceDetector {
  private constructor(private readonly session: ort.InferenceSession) {}

  static async load(modelPath: string): Promise<FaceDetector> {
    // One thread per session: each worker thread is one of the pool's cores.
    const session = await ort.InferenceSession.create(modelPath, { logSeverityLevel: 3, intraOpNumThreads: 1, interOpNumThreads: 1 });
    return new FaceDetector(session);
  }

  /** Faces in the image, largest first: every pass of `passesOver` here, one after the other. */
  async detect(image: RgbImage): Promise<Detection[]> {
    const found: Detection[] = [];
    for (const pass of passesOver(image)) found.push(...(await this.find(image, pass)));
    return facesAmong(found, image);
  }

  /** What one pass finds (boxes in image coordinates; duplicates across passes are left to facesAmong). */
  async find(image: RgbImage, pass: DetectorPass): Promise<Detection[]> {
    if (pass === 'whole') {
      // Letterboxed (aspect kept, the rest at the model's zero) rather than stretched: a
      // stretched panorama squashes faces past what the model recognises.
      const { image: fitted, scale } = await fitInside(image, INPUT_WIDTH, INPUT_HEIGHT);
      return this.candidates(fitted, (x, y) => ({ x: (x * INPUT_WIDTH) / scale, y: (y * INPUT_HEIGHT) / scale }));
    }
    const pixels = await cropResized(image, pass, INPUT_WIDTH, INPUT_HEIGHT);
    const found = await this.candidates(pixels, (x, y) => ({ x: pass.left + x * pass.width, y: pass.top + y * pass.height }));
    // A face cut by a tile's inner edge is left to the tile (or the whole pass) that holds it whole.
    return found.filter((d) => !cutByInnerEdge(d, pass, image));
  }

  /** One model pass over pixels placed at the input's top-left; boxes mapped by `toImage` from 0..1 model coordinates. */
  private async candidates(pixels: RgbImage, toImage: (x: number, y: number) => { x: number; y: number }): Promise<Detection[]> {
    const plane = INPUT_WIDTH * INPUT_HEIGHT;
    const input = new Float32Array(3 * plane);
    for (let y = 0; y < pixels.height; y++) {
      for (let x = 0; x < pixels.width; x++) {
        const from = (y * pixels.width + x) * 3;
        const to = y * INPUT_WIDTH + x;
        input[to] = (pixels.data[from]! - 127) / 128;
        input[plane + to] = (pixels.data[from + 1]! - 127) / 128;
        input[2 * plane + to] = (pixels.data[from + 2]! - 127) / 128;
      }
    }
    const output = await this.session.run({ input: new ort.Tensor('float32', input, [1, 3, INPUT_HEIGHT, INPUT_WIDTH]) });
    const scores = output.scores!.data as Float32Array;
    const boxes = output.boxes!.data as Float32Array;
    const found: Detection[] = [];
    for (let i = 0; i < scores.length / 2; i++) {
      const score = scores[i * 2 + 1]!;
      if (score < SCORE_THRESHOLD) continue;
      const a = toImage(boxes[i * 4]!, boxes[i * 4 + 1]!);
      const b = toImage(boxes[i * 4 + 2]!, boxes[i * 4 + 3]!);
      if (b.x - a.x < 1 || b.y - a.y < 1) continue;
      found.push({ left: a.x, top: a.y, width: b.x - a.x, height: b.y - a.y, score });
    }
    return found;
  }
}

/** One model pass of the detector: the whole image letterboxed, or one tile of it. */
export type DetectorPass = 'whole' | Region;

/**
 * The passes that find every face of an image of this size: the whole image,
 * and, when shrinking it to 640×480 puts its small faces below the model's
 * ~28 px, overlapping tiles at 1/TILE_ZOOM, so that 36-px faces of a
 * 1920×1080 photo are found. They are independent: the container runs them
 * on all its workers at once.
 */
export function passesOver(size: { width: number; height: number }): DetectorPass[] {
  const scale = Math.min(INPUT_WIDTH / size.width, INPUT_HEIGHT / size.height);
  return ['whole', ...(scale < 1 / TILE_ZOOM ? tilesOf(size) : [])];
}

/** The faces among what the passes found, largest first: boxes kept inside the image, one per face (the surest). */
export function facesAmong(found: readonly Detection[], image: { width: number; height: number }): Detection[] {
  const inside = found.flatMap((d) => {
    const left = Math.max(0, d.left);
    const top = Math.max(0, d.top);
    const width = Math.min(image.width, d.left + d.width) - left;
    const height = Math.min(image.height, d.top + d.height) - top;
    return width >= 1 && height >= 1 ? [{ left, top, width, height, score: d.score }] : [];
  });
  return suppressOverlaps(inside).sort((a, b) => b.width * b.height - a.width * a.height);
}

/** Tiles of TILE_ZOOM × the model input, overlapping by a fifth, covering the image. */
function tilesOf(image: { width: number; height: number }): Region[] {
  const width = INPUT_WIDTH * TILE_ZOOM;
  const height = INPUT_HEIGHT * TILE_ZOOM;
  const starts = (length: number, tile: number) => {
    const out: number[] = [];
    for (let start = 0; ; start += tile * 0.8) {
      out.push(Math.max(0, Math.min(start, length - tile)));
      if (start + tile >= length) return out;
    }
  };
  return starts(image.height, height).flatMap((top) => starts(image.width, width).map((left) => ({ left, top, width, height })));
}

function cutByInnerEdge(box: Region, tile: Region, image: { width: number; height: number }): boolean {
  const margin = 2;
  return (
    (tile.left > 0 && box.left <= tile.left + margin) ||
    (tile.top > 0 && box.top <= tile.top + margin) ||
    (tile.left + tile.width < image.width && box.left + box.width >= tile.left + tile.width - margin) ||
    (tile.top + tile.height < image.height && box.top + box.height >= tile.top + tile.height - margin)
  );
}

function overlapOf(a: Region, b: Region): number {
  const w = Math.min(a.left + a.width, b.left + b.width) - Math.max(a.left, b.left);
  const h = Math.min(a.top + a.height, b.top + b.height) - Math.max(a.top, b.top);
  return w <= 0 || h <= 0 ? 0 : w * h;
}

function sameFace(a: Region, b: Region): boolean {
  const overlap = overlapOf(a, b);
  const areaA = a.width * a.height;
  const areaB = b.width * b.height;
  return overlap / (areaA + areaB - overlap) >= NMS_IOU || overlap / Math.min(areaA, areaB) >= CONTAINED;
}

/** Greedy non-maximum suppression: the most confident box of each group of boxes on one face stays. */
function suppressOverlaps(candidates: Detection[]): Detection[] {
  const kept: Detection[] = [];
  for (const candidate of [...candidates].sort((a, b) => b.score - a.score)) {
    if (kept.every((k) => !sameFace(k, candidate))) kept.push(candidate);
  }
  return kept;
}
