/**
 * Faces whose truth is known, shrunk and re-embedded in photos:
 * labels survive downscaling, so the error of each estimator can be measured
 * by face size without a labelled crowd set.
 *
 * The faces: the 107 the detector finds on @vladmandic/human's contact sheet
 * (assets/screenshot-facematch.jpg, MIT licence, 18 × 6 cells of real photos,
 * faces about 65 px wide) and the five faces of its face-detect strip (about
 * 90 px). Gender and sunglasses were labelled by looking at each cell; cells
 * where the truth is unclear (face paint, sunglasses pushed up on the head,
 * a pixelated face) are left out of that label. Age has no ground truth here:
 * the reference is the estimate at the face's own size, so the table measures
 * how far shrinking moves it, and whether shrunk ages keep their spread or
 * collapse towards the middle.
 */
import sharp from 'sharp';
import { decodeImage } from '../../src/face/decode.ts';
import type { FaceModels } from '../../src/face/models/index.ts';
import type { Region, RgbImage } from '../../src/face/models/image.ts';
import { asset, fivePeople, FIVE_PANELS, random } from './images.ts';

export interface KnownFace {
  /** Where it comes from, e.g. `sheet r1c3` or `strip 2`. */
  name: string;
  source: RgbImage;
  /** The detector's box at the face's own size. */
  box: Region;
  gender?: 'male' | 'female';
  /** Whether the face wears sunglasses; undefined where that is unclear. */
  sunglasses?: boolean;
}

/** Top of each row of faces on the contact sheet, and its cell pitch. */
export const SHEET_ROWS = [293, 405, 518, 624, 740, 852];
export const SHEET_PITCH = 107;
export const SHEET_LEFT = 20;
/** Per row, per column: m/f, or ? where unclear. */
export const SHEET_GENDER = [
  'mmmmmmmmmmmmmmmmmm',
  'mmmmmmffmffffmfmmf',
  'mfffmmmmffffmfffff',
  'fmffmffffffffffmff',
  'ffffffffmff?mfffff',
  'fffffmmffmffffffff',
];
/** Per row, per column: S sunglasses worn, - none, ? unclear. */
const SHEET_SUNGLASSES = ['---------?--?-----', '-S-S----S------S--', 'S------S-----S----', '------------------', '-----------S------', '---------------?--'];
const STRIP_GENDER = ['male', 'female', 'female', 'female', 'female'] as const;

/** The known faces, found by `models` on their source photos. */
export async function knownFaces(models: FaceModels): Promise<KnownFace[]> {
  const faces: KnownFace[] = [];
  const sheet = await decodeImage(await sharp(asset('screenshot-facematch.jpg')).toBuffer());
  for (const box of await models.detect(sheet, 200)) {
    const row = SHEET_ROWS.findIndex((top) => Math.abs(box.top - top) < 25);
    const column = Math.round((box.left - SHEET_LEFT) / SHEET_PITCH);
    if (row < 0 || column < 0 || column > 17) continue;
    const gender = SHEET_GENDER[row]![column];
    const glasses = SHEET_SUNGLASSES[row]![column];
    faces.push({
      name: `sheet r${row}c${column}`,
      source: sheet,
      box,
      ...(gender === '?' ? {} : { gender: gender === 'm' ? 'male' : 'female' }),
      ...(glasses === '?' ? {} : { sunglasses: glasses === 'S' }),
    });
  }
  const strip = await decodeImage(await fivePeople());
  for (const box of await models.detect(strip, 10)) {
    const panel = FIVE_PANELS.findIndex((p) => box.left >= p.left && box.left < p.right);
    faces.push({ name: `strip ${panel}`, source: strip, box, gender: STRIP_GENDER[panel], sunglasses: false });
  }
  return faces;
}

export interface EmbeddedPhoto {
  image: RgbImage;
  /** Each face's box in the photo, in the order of `faces`. */
  boxes: Region[];
  faces: KnownFace[];
}

/** Context kept around each face when it is cut out: hair, ears and some background. */
const CONTEXT = 0.6;

/**
 * The faces shrunk so that their boxes are `width` pixels wide, laid out in a
 * grid on a textured background and saved as a JPEG, as a crowd photo would
 * come; the photo is decoded as the container decodes it.
 */
export async function embedAtWidth(faces: readonly KnownFace[], width: number, photoWidth = 1280): Promise<EmbeddedPhoto> {
  const tiles = await Promise.all(
    faces.map(async (face) => {
      const b = face.box;
      const left = Math.max(0, Math.round(b.left - b.width * CONTEXT));
      const top = Math.max(0, Math.round(b.top - b.height * CONTEXT));
      const right = Math.min(face.source.width, Math.round(b.left + b.width * (1 + CONTEXT)));
      const bottom = Math.min(face.source.height, Math.round(b.top + b.height * (1 + CONTEXT)));
      const scale = width / b.width;
      const tileWidth = Math.max(1, Math.round((right - left) * scale));
      const tileHeight = Math.max(1, Math.round((bottom - top) * scale));
      const input = sharp(face.source.data, { raw: { width: face.source.width, height: face.source.height, channels: 3 } })
        .extract({ left, top, width: right - left, height: bottom - top })
        .resize(tileWidth, tileHeight, { kernel: 'lanczos3' });
      return {
        input: await input.png().toBuffer(),
        width: tileWidth,
        height: tileHeight,
        offsetX: (b.left - left) * scale,
        offsetY: (b.top - top) * scale,
        boxWidth: b.width * scale,
        boxHeight: b.height * scale,
      };
    }),
  );
  const cell = Math.ceil(Math.max(...tiles.map((t) => Math.max(t.width, t.height))) * 1.15);
  const columns = Math.max(1, Math.floor(photoWidth / cell));
  const rows = Math.ceil(tiles.length / columns);
  const height = Math.max(64, rows * cell);
  const placed = tiles.map((tile, i) => ({ tile, left: (i % columns) * cell, top: Math.floor(i / columns) * cell }));
  const background = await texture(photoWidth, height);
  const jpeg = await sharp(background, { raw: { width: photoWidth, height, channels: 3 } })
    .composite(placed.map(({ tile, left, top }) => ({ input: tile.input, left, top })))
    .jpeg({ quality: 90 })
    .toBuffer();
  return {
    image: await decodeImage(jpeg),
    boxes: placed.map(({ tile, left, top }) => ({ left: left + tile.offsetX, top: top + tile.offsetY, width: tile.boxWidth, height: tile.boxHeight })),
    faces: [...faces],
  };
}

/** A soft, blotchy background, so the photo is not a flat colour a detector never sees. */
async function texture(width: number, height: number): Promise<Buffer> {
  const next = random(21);
  const small = Buffer.alloc(32 * 24 * 3);
  for (let i = 0; i < small.length; i++) small[i] = 70 + Math.floor(next() * 110);
  return sharp(small, { raw: { width: 32, height: 24, channels: 3 } })
    .resize(width, height)
    .raw()
    .toBuffer();
}
