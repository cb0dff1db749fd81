/** Raw RGB pixels as they travel between the server and the model workers. */
import sharp from 'sharp';

export interface RgbImage {
  /** width × height × 3 bytes, row-major, RGB. */
  data: Uint8Array;
  width: number;
  height: number;
}

export interface Region {
  left: number;
  top: number;
  width: number;
  height: number;
}

/**
 * A region of the image (it may reach past the borders: the outside is
 * black) scaled to width × height without keeping the aspect ratio.
 */
export async function cropResized(image: RgbImage, region: Region, width: number, height: number): Promise<RgbImage> {
  const left = Math.round(region.left);
  const top = Math.round(region.top);
  const right = Math.round(region.left + region.width);
  const bottom = Math.round(region.top + region.height);
  const insideLeft = Math.min(Math.max(0, left), image.width - 1);
  const insideTop = Math.min(Math.max(0, top), image.height - 1);
  const inside = {
    left: insideLeft,
    top: insideTop,
    width: Math.max(1, Math.min(image.width, right) - insideLeft),
    height: Math.max(1, Math.min(image.height, bottom) - insideTop),
  };
  const padded = sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } })
    .extract(inside)
    .extend({
      left: Math.max(0, -left),
      top: Math.max(0, -top),
      right: Math.max(0, right - image.width),
      bottom: Math.max(0, bottom - image.height),
      background: { r: 0, g: 0, b: 0 },
    });
  // extend() runs after resize() in one pipeline, so the padded crop is materialised first.
  const crop = await padded.raw().toBuffer({ resolveWithObject: true });
  const data = await sharp(crop.data, { raw: { width: crop.info.width, height: crop.info.height, channels: 3 } })
    .resize(width, height, { fit: 'fill' })
    .raw()
    .toBuffer();
  return { data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), width, height };
}

/** Scales the whole image to fit in width × height, keeping its aspect ratio. */
export async function fitInside(image: RgbImage, width: number, height: number): Promise<{ image: RgbImage; scale: number }> {
  const scale = Math.min(width / image.width, height / image.height);
  const w = Math.max(1, Math.round(image.width * scale));
  const h = Math.max(1, Math.round(image.height * scale));
  const data = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } })
    .resize(w, h, { fit: 'fill' })
    .raw()
    .toBuffer();
  return { image: { data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), width: w, height: h }, scale };
}
