/**
 * The bench's photos, made from the images inside @vladmandic/human: the
 * portrait (1 face), four panels of the face strip (4 faces), two rows of the
 * contact sheet (20 faces), all at 640 px wide, and four full rows of the
 * contact sheet at 1920 px (71 faces), and the whole contact sheet, 1920 ×
 * 954 px, whose 100 largest faces (of about 115) are answered.
 */
import sharp from 'sharp';
import { crowd, fivePeople, portrait, sheetFaces } from '../../test/face/images.ts';

export interface Photo {
  name: string;
  bytes: Buffer;
}

export async function benchPhotos(): Promise<Photo[]> {
  const at640 = (image: Buffer) => sharp(image).resize({ width: 640 }).jpeg({ quality: 90 }).toBuffer();
  const strip = await sharp(await fivePeople())
    .extract({ left: 0, top: 0, width: 632, height: 165 })
    .toBuffer();
  // Two rows of ten faces from the contact sheet of face crops.
  const twenty = await sharp(await crowd())
    .extract({ left: 0, top: 283, width: 1030, height: 210 })
    .toBuffer();
  return [
    { name: '1 face at 640 px', bytes: await at640(await portrait()) },
    { name: '4 faces at 640 px', bytes: await at640(strip) },
    { name: '20 faces at 640 px', bytes: await at640(twenty) },
    { name: '71 faces at 1920 px', bytes: await sheetFaces(4, 18) },
    { name: '100 faces at 1920 px (contact sheet)', bytes: await crowd() },
  ];
}
