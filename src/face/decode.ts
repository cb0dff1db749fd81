/**
 * Image bytes → RGB pixels, in the model worker (decoding is CPU work that
 * must not hold the server's event loop). JPEG, PNG, GIF (first frame) and
 * WebP through sharp with the EXIF orientation applied; BMP, which sharp's
 * libvips build does not read, through bmp-ts. Dimensions are checked from
 * the header before any pixel is decoded, so a tiny file that claims huge
 * dimensions costs nothing.
 */
import sharp, { type Metadata, type Sharp } from 'sharp';
import { decode as decodeBmp } from 'bmp-ts';
import { imageTooBig, imageTooSmall, invalidImage } from './errors.ts';
import type { RgbImage } from './models/image.ts';

export const MIN_SIDE = 36;
export const MAX_SIDE = 4096;
const FORMATS = new Set(['jpeg', 'png', 'gif', 'webp']);

function checkDimensions(width: number, height: number): void {
  if (width < MIN_SIDE || height < MIN_SIDE) {
    throw imageTooSmall(`Image size is too small: ${width}x${height}; each side must be at least ${MIN_SIDE} pixels.`);
  }
  if (width > MAX_SIDE || height > MAX_SIDE) {
    throw imageTooBig(`Image size is too big: ${width}x${height}; each side must be at most ${MAX_SIDE} pixels.`);
  }
}

async function toRgb(pipeline: Sharp): Promise<RgbImage> {
  try {
    const { data, info } = await pipeline.flatten({ background: '#ffffff' }).toColourspace('srgb').raw().toBuffer({ resolveWithObject: true });
    if (info.channels !== 3) throw new Error(`decoded to ${info.channels} channels`);
    return { data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), width: info.width, height: info.height };
  } catch {
    throw invalidImage();
  }
}

function isBmp(bytes: Uint8Array): boolean {
  return bytes[0] === 0x42 && bytes[1] === 0x4d;
}

/** Width and height from a BMP's DIB header (core header: 16-bit fields; later ones: 32-bit). */
function bmpDimensions(bytes: Uint8Array): { width: number; height: number } {
  if (bytes.length < 26) throw invalidImage();
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerSize = view.getUint32(14, true);
  if (headerSize === 12) return { width: view.getUint16(18, true), height: view.getUint16(20, true) };
  if (headerSize < 40) throw invalidImage();
  return { width: Math.abs(view.getInt32(18, true)), height: Math.abs(view.getInt32(22, true)) };
}

export async function decodeImage(bytes: Uint8Array): Promise<RgbImage> {
  if (isBmp(bytes)) {
    const { width, height } = bmpDimensions(bytes);
    checkDimensions(width, height);
    let rgba: Buffer;
    try {
      rgba = decodeBmp(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), { toRGBA: true }).data;
    } catch {
      throw invalidImage();
    }
    if (rgba.length < width * height * 4) throw invalidImage();
    // BMP alpha is rarely meaningful (bmp-ts leaves 0 in 24-bit files): every pixel is opaque.
    for (let i = 3; i < rgba.length; i += 4) rgba[i] = 255;
    return toRgb(sharp(rgba, { raw: { width, height, channels: 4 } }));
  }
  let metadata: Metadata;
  try {
    // Header only, so no pixel limit: the dimensions are checked just below, with their own error.
    metadata = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch {
    throw invalidImage();
  }
  if (!metadata.format || !FORMATS.has(metadata.format) || !metadata.width || !metadata.height) throw invalidImage();
  // Orientations 5–8 swap the sides once the EXIF rotation is applied.
  const swapped = (metadata.orientation ?? 1) >= 5;
  checkDimensions(swapped ? metadata.height : metadata.width, swapped ? metadata.width : metadata.height);
  return toRgb(sharp(bytes, { limitInputPixels: MAX_SIDE * MAX_SIDE }).rotate());
}
