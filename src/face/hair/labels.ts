/**
 * The labelled image lists the hair trainer reads, in CelebA's plain-text
 * formats (docs/face.md "Train the heads"):
 * - an attribute file: optionally a first line with the count, then a line of
 *   attribute names, then `<image> <value> …` per image, a value 1 (has it),
 *   −1 (has it not) or 0 (not labelled; CelebA itself has no 0);
 * - a pairs file, `<image> <key>` per line: CelebA's identity_CelebA.txt
 *   (the person in each image), or a check set's groups.txt (its group).
 */
import { readFileSync } from 'node:fs';
import { UsageError } from '../../common/errors.ts';
import { HAIR_COLOURS, REQUIRED_HEADS, type HeadName } from './heads.ts';

export interface LabelledImage {
  image: string;
  /** +1, −1, or 0 (not labelled) per head the file has a column for. */
  labels: Partial<Record<HeadName, 1 | -1 | 0>>;
}

/** CelebA's column for each head; `No_Beard` is the beard's opposite. Colours are `<Colour>_Hair`. */
const COLUMNS: Record<(typeof REQUIRED_HEADS)[number], { column: string; inverted?: true }> = {
  moustache: { column: 'Mustache' },
  beard: { column: 'No_Beard', inverted: true },
  sideburns: { column: 'Sideburns' },
  bald: { column: 'Bald' },
  hat: { column: 'Wearing_Hat' },
};
const columnOf = (head: HeadName) =>
  (COLUMNS as Partial<Record<HeadName, { column: string; inverted?: true }>>)[head] ?? { column: `${head[0]!.toUpperCase()}${head.slice(1)}_Hair` };

const linesOf = (path: string) =>
  readFileSync(path, 'utf8')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter(Boolean);

/** Reads an attribute file; only the columns of the heads are kept. */
export function readAttributeFile(path: string): { images: LabelledImage[]; heads: HeadName[] } {
  const lines = linesOf(path);
  if (/^\d+$/.test(lines[0] ?? '')) lines.shift();
  const names = (lines.shift() ?? '').split(/\s+/);
  const heads = [...REQUIRED_HEADS, ...HAIR_COLOURS].filter((head) => names.includes(columnOf(head).column));
  if (!heads.length)
    throw new UsageError(`${path}: no column of the heads (${[...REQUIRED_HEADS, ...HAIR_COLOURS].map((h) => columnOf(h).column).join(', ')})`);
  const images = lines.map((line, n) => {
    const [image, ...values] = line.split(/\s+/);
    if (values.length !== names.length) throw new UsageError(`${path}: line ${n + 3} has ${values.length} values for ${names.length} attributes`);
    const labels: LabelledImage['labels'] = {};
    for (const head of heads) {
      const { column, inverted } = columnOf(head);
      const value = Number(values[names.indexOf(column)]);
      if (value !== 1 && value !== -1 && value !== 0) throw new UsageError(`${path}: line ${n + 3}: ${column} is not 1, -1 or 0`);
      labels[head] = (inverted ? -value || 0 : value) as 1 | -1 | 0;
    }
    return { image: image!, labels };
  });
  return { images, heads };
}

/** Reads a pairs file: image → person (identities) or group (a check set). */
export function readPairsFile(path: string): Map<string, string> {
  const pairs = new Map<string, string>();
  for (const line of linesOf(path)) {
    const [image, key] = line.split(/\s+/);
    if (!image || !key) throw new UsageError(`${path}: ${JSON.stringify(line)} is not "<image> <key>"`);
    pairs.set(image, key);
  }
  return pairs;
}

/** The heads missing from a training set that the heads file needs. */
export function missingRequiredHeads(heads: readonly HeadName[]): string[] {
  const missing = REQUIRED_HEADS.filter((head) => !heads.includes(head)).map((head) => columnOf(head).column);
  if (!HAIR_COLOURS.some((colour) => heads.includes(colour))) missing.push('a <Colour>_Hair column');
  return missing;
}
