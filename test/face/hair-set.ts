/**
 * A small labelled set for the hair trainer, made at test time (no CelebA):
 * faces of @vladmandic/human's contact sheet (MIT licence), each cut out,
 * enlarged to about 130 px, and given beards, moustaches, sideburns, hats,
 * bald crowns and hair of four colours painted on, at random from a seed;
 * the labels are what was painted. Written as CelebA's files are: an
 * attribute file (count line, names line, ±1 per image), an identity file,
 * and for a check set a groups file.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { asset, random } from './images.ts';
import { SHEET_GENDER, SHEET_LEFT, SHEET_PITCH, SHEET_ROWS } from './known-faces.ts';

const SIDE = 220;
const COLOURS = { black: '#141414', blond: '#e6cf7a', brown: '#6b4423', gray: '#a8a8a8' } as const;
type Colour = keyof typeof COLOURS;
export const COLUMNS = ['Mustache', 'No_Beard', 'Sideburns', 'Bald', 'Wearing_Hat', 'Black_Hair', 'Blond_Hair', 'Brown_Hair', 'Gray_Hair', 'Male'];

interface Painted {
  moustache: boolean;
  beard: boolean;
  sideburns: boolean;
  bald: boolean;
  hat: boolean;
  colour: Colour;
}

/** The painting of one face's labels, on a 220-px cut whose face spans about 45..175. */
function overlay(p: Painted): Buffer {
  const shapes = [
    p.hat
      ? '<rect x="40" y="0" width="140" height="34" fill="#b02a2a"/><rect x="20" y="30" width="180" height="8" fill="#8a1f1f"/>'
      : `<ellipse cx="110" cy="20" rx="70" ry="24" fill="${p.bald ? '#deb08c' : COLOURS[p.colour]}"/>`,
    p.beard ? '<ellipse cx="110" cy="192" rx="48" ry="18" fill="#3a2616" fill-opacity="0.6"/>' : '',
    p.moustache ? '<ellipse cx="110" cy="160" rx="20" ry="4" fill="#24170d" fill-opacity="0.7"/>' : '',
    p.sideburns ? '<rect x="40" y="100" width="9" height="44" fill="#2e1f12"/><rect x="171" y="100" width="9" height="44" fill="#2e1f12"/>' : '',
  ];
  return Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="${SIDE}" height="${SIDE}">${shapes.join('')}</svg>`);
}

const sign = (b: boolean) => (b ? '1' : '-1');

export interface HairSetOptions {
  /** Contact-sheet cells to use: [row, column]. */
  cells: [number, number][];
  /** Variants (different paintings) per face. */
  variants: number;
  seed: number;
}

/** Writes the set into `dir`: images, attributes.txt, identities.txt and groups.txt (group = men / women by looking). */
export async function writeHairSet(dir: string, { cells, variants, seed }: HairSetOptions): Promise<void> {
  await mkdir(dir, { recursive: true });
  const next = random(seed);
  const coin = (p = 0.5) => next() < p;
  const rows: string[] = [];
  const identities: string[] = [];
  const groups: string[] = [];
  for (const [row, column] of cells) {
    const male = SHEET_GENDER[row]![column] === 'm';
    // The face's box is about 65 px from (SHEET_LEFT + column × pitch, row top); cut 110 px around its centre.
    const cut = sharp(asset('screenshot-facematch.jpg')).extract({
      left: SHEET_LEFT + column * SHEET_PITCH - 22,
      top: SHEET_ROWS[row]! - 22,
      width: 110,
      height: 110,
    });
    const face = await cut.resize(SIDE, SIDE).png().toBuffer();
    for (let v = 0; v < variants; v++) {
      const hat = coin(0.3);
      const painted: Painted = {
        hat,
        bald: !hat && coin(0.25),
        beard: coin(),
        moustache: coin(),
        sideburns: coin(0.4),
        colour: (['black', 'blond', 'brown', 'gray'] as const)[Math.floor(next() * 4)]!,
      };
      const name = `r${row}c${column}v${v}.jpg`;
      await writeFile(
        join(dir, name),
        await sharp(face)
          .composite([{ input: overlay(painted) }])
          .jpeg({ quality: 92 })
          .toBuffer(),
      );
      const hairShown = !painted.hat && !painted.bald;
      const colours = (['black', 'blond', 'brown', 'gray'] as const).map((c) => sign(hairShown && painted.colour === c));
      rows.push(
        [name, sign(painted.moustache), sign(!painted.beard), sign(painted.sideburns), sign(painted.bald), sign(painted.hat), ...colours, sign(male)].join(' '),
      );
      identities.push(`${name} ${row * 100 + column}`);
      groups.push(`${name} ${male ? 'men' : 'women'}`);
    }
  }
  await writeFile(join(dir, 'attributes.txt'), [String(rows.length), COLUMNS.join(' '), ...rows].join('\n') + '\n');
  await writeFile(join(dir, 'identities.txt'), identities.join('\n') + '\n');
  await writeFile(join(dir, 'groups.txt'), groups.join('\n') + '\n');
}
