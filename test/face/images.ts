/**
 * Test photos, all made at test time from the images that ship inside the
 * @vladmandic/human package (its README screenshots: real photos of faces),
 * or synthesised; no image files live in this repository.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { crc32 } from 'node:zlib';
import sharp from 'sharp';

const require = createRequire(import.meta.url);
const ASSETS = join(dirname(dirname(require.resolve('@vladmandic/human'))), 'assets');

export const asset = (name: string) => join(ASSETS, name);

/** One man facing the camera (the face-id demo's portrait), 360×360 JPEG. */
export function portrait(): Promise<Buffer> {
  return sharp(asset('screenshot-faceid.jpg')).extract({ left: 0, top: 120, width: 180, height: 180 }).resize(360, 360).jpeg({ quality: 92 }).toBuffer();
}

/**
 * Five face crops side by side (the face-detect demo's strip): a man, then
 * four women, left to right; each face lies inside its panel.
 */
export const FIVE_PANELS = [
  { left: 8, right: 158 },
  { left: 165, right: 315 },
  { left: 322, right: 472 },
  { left: 479, right: 629 },
  { left: 636, right: 790 },
];
export function fivePeople(): Promise<Buffer> {
  return sharp(asset('screenshot-facedetect.jpg')).extract({ left: 0, top: 340, width: 800, height: 165 }).jpeg({ quality: 92 }).toBuffer();
}

/** The face-match demo: a contact sheet of more than 100 faces, 1920×954 JPEG (as shipped). */
export function crowd(): Promise<Buffer> {
  return sharp(asset('screenshot-facematch.jpg')).toBuffer();
}

/**
 * Faces of the contact sheet's grid as one photo: `rows` rows of `columns`
 * cells from its first row of faces (about 65-px faces, 107-px cells; one
 * cell of the third row holds a face too dark for the detector).
 */
export function sheetFaces(rows: number, columns: number): Promise<Buffer> {
  return sharp(asset('screenshot-facematch.jpg'))
    .extract({ left: 0, top: 283, width: Math.min(1920, Math.round(columns * 106.7)), height: rows * 107 })
    .jpeg({ quality: 92 })
    .toBuffer();
}

/** A man wearing dark sunglasses, cut from the contact sheet and doubled in size. */
export function sunglasses(): Promise<Buffer> {
  return sharp(asset('screenshot-facematch.jpg')).extract({ left: 104, top: 380, width: 125, height: 125 }).resize(250, 250).jpeg({ quality: 92 }).toBuffer();
}

/** Deterministic pseudo-random numbers (mulberry32), so synthetic images are the same every run. */
export function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Smooth colour noise: a landscape-like picture with no face in it. */
export async function noFaces(): Promise<Buffer> {
  const next = random(7);
  const small = Buffer.alloc(16 * 12 * 3);
  for (let i = 0; i < small.length; i++) small[i] = Math.floor(next() * 256);
  return sharp(small, { raw: { width: 16, height: 12, channels: 3 } })
    .resize(480, 360)
    .png()
    .toBuffer();
}

/** The same picture with Gaussian noise of standard deviation sigma added to every channel, as PNG (lossless). */
export async function withNoise(image: Buffer, sigma: number): Promise<Buffer> {
  const { data, info } = await sharp(image).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const next = random(11);
  for (let i = 0; i < data.length; i++) {
    // Box–Muller.
    const n = Math.sqrt(-2 * Math.log(next() || 1e-9)) * Math.cos(2 * Math.PI * next());
    data[i] = Math.max(0, Math.min(255, Math.round(data[i]! + sigma * n)));
  }
  return sharp(data, { raw: { width: info.width, height: info.height, channels: 3 } })
    .png()
    .toBuffer();
}

/** A surgical-mask shape drawn over the lower face of the portrait (nose to chin). */
export async function maskedPortrait(): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="360" height="360">
    <path d="M 108 175 Q 165 160 222 175 L 236 235 Q 165 290 94 235 Z" fill="#9fd3f0" stroke="#7ab6da" stroke-width="3"/>
    <path d="M 106 200 L 228 200 M 102 222 L 232 222" stroke="#86c2e6" stroke-width="3"/>
    <path d="M 108 180 L 80 165 M 222 180 L 252 165" stroke="#ffffff" stroke-width="3"/>
  </svg>`;
  return sharp(await portrait())
    .composite([{ input: Buffer.from(svg) }])
    .jpeg({ quality: 92 })
    .toBuffer();
}

/**
 * A "PNG bomb": a valid small PNG whose header claims width × height pixels
 * (IHDR rewritten, its CRC recomputed), so a decoder that trusted it would
 * allocate gigabytes.
 */
export async function pngBomb(width: number, height: number): Promise<Buffer> {
  const png = Buffer.from(
    await withNoise(
      await sharp({ create: { width: 40, height: 40, channels: 3, background: '#777' } })
        .png()
        .toBuffer(),
      40,
    ),
  );
  // Signature (8) + IHDR length (4) + "IHDR" (4), then width, height, and the chunk's CRC after 13 data bytes.
  png.writeUInt32BE(width, 16);
  png.writeUInt32BE(height, 20);
  png.writeUInt32BE(crc32(png.subarray(12, 29)), 29);
  return png;
}
