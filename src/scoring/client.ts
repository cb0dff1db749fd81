/**
 * The image client (§2.1): decodes a JPEG/PNG/WebP/… file or URL with sharp,
 * scales it to 224×224 (R-SCORE-7), sends it as 0..255 integers to the
 * container or through the front-end, and names the top classes from the
 * 1000-entry list of [class code, name] (R-SCORE-6).
 */
import { readFile } from 'node:fs/promises';
import sharp, { type OutputInfo } from 'sharp';
import { fetch, request, type Agent } from 'undici';
import { StartupError, UsageError } from '../common/errors.ts';
import { CLASS_COUNT } from './classifier.ts';
import { INPUT_SHAPE } from './tensor-body.ts';

const SIDE = INPUT_SHAPE[3]!;
/** The reference crop of the ImageNet models: scale the shorter side to 256, keep the centre 224×224. */
const RESIZE_SIDE = 256;

export interface ImageClass {
  rank: number;
  index: number;
  code: string;
  name: string;
  probability: number;
}

export interface ScoreAnswer {
  result: number[];
  time: number;
}

/** The image's RGB pixels at 224×224, channels first: the [1,3,224,224] the service takes. */
export async function imageToPixels(image: Buffer): Promise<Uint8Array> {
  let scaled: { data: Buffer; info: OutputInfo };
  try {
    scaled = await sharp(image, { failOn: 'error' })
      .rotate() // honour EXIF orientation, as a viewer shows the photo
      .removeAlpha()
      .toColourspace('srgb')
      .resize(RESIZE_SIDE, RESIZE_SIDE, { fit: 'outside' })
      .raw()
      .toBuffer({ resolveWithObject: true });
  } catch (err) {
    throw new UsageError(`cannot decode the image: ${(err as Error).message}`);
  }
  const { width, height } = scaled.info;
  const { data } = await sharp(scaled.data, { raw: { width, height, channels: 3 } })
    .extract({ left: Math.floor((width - SIDE) / 2), top: Math.floor((height - SIDE) / 2), width: SIDE, height: SIDE })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const planar = new Uint8Array(3 * SIDE * SIDE);
  for (let i = 0; i < SIDE * SIDE; i++) {
    for (let channel = 0; channel < 3; channel++) planar[channel * SIDE * SIDE + i] = data[i * 3 + channel]!;
  }
  return planar;
}

/** {"data": [[[[…]]]]} as text; `format` picks integers 0..255 or floats 0..1 (§2.1 allows both). */
export function scoreRequestBody(pixels: Uint8Array, format: 'integers' | 'floats' = 'integers'): string {
  const write = format === 'integers' ? (v: number) => String(v) : (v: number) => String(v / 255);
  const channels: string[] = [];
  for (let channel = 0; channel < 3; channel++) {
    const rows: string[] = [];
    for (let y = 0; y < SIDE; y++) {
      const row = new Array<string>(SIDE);
      const base = channel * SIDE * SIDE + y * SIDE;
      for (let x = 0; x < SIDE; x++) row[x] = write(pixels[base + x]!);
      rows.push(`[${row.join(',')}]`);
    }
    channels.push(`[${rows.join(',')}]`);
  }
  return `{"data":[[${channels.join(',')}]]}`;
}

export type Labels = [code: string, name: string][];

/** Reads the Keras-style class index {"0": ["n01440764", "tench"], …} into a list by index. */
export async function loadLabels(path: string): Promise<Labels> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    throw new StartupError(`cannot read the class list ${path}: ${(err as Error).message}`);
  }
  const labels: Labels = [];
  for (let i = 0; i < CLASS_COUNT; i++) {
    const entry = (parsed as Record<string, unknown> | null)?.[String(i)];
    if (!Array.isArray(entry) || entry.length !== 2 || entry.some((s) => typeof s !== 'string')) {
      throw new StartupError(`class list ${path} has no [class code, name] entry for index ${i}`);
    }
    labels.push([entry[0] as string, entry[1] as string]);
  }
  return labels;
}

/** The k most probable classes, best first, named from the list. */
export function topClasses(result: readonly number[], labels: Labels, k = 5): ImageClass[] {
  return result
    .map((probability, index) => ({ probability, index }))
    .sort((a, b) => b.probability - a.probability)
    .slice(0, k)
    .map(({ probability, index }, rank) => ({ rank: rank + 1, index, code: labels[index]?.[0] ?? '?', name: labels[index]?.[1] ?? '?', probability }));
}

export async function readImage(source: string, dispatcher?: Agent): Promise<Buffer> {
  if (/^https?:\/\//i.test(source)) {
    const response = await fetch(source, dispatcher ? { dispatcher } : {});
    if (response.status !== 200) {
      await response.body?.cancel();
      throw new UsageError(`GET ${source} answered ${response.status}`);
    }
    return Buffer.from(await response.arrayBuffer());
  }
  try {
    return await readFile(source);
  } catch (err) {
    throw new UsageError(`cannot read ${source}: ${(err as Error).message}`);
  }
}

export interface ScoreTarget {
  /** The full URL to POST to: …/score, or …/api/v1/service/<name>/score. */
  url: string;
  key?: string;
  dispatcher?: Agent;
}

export async function sendScoreRequest(target: ScoreTarget, body: string): Promise<ScoreAnswer> {
  const response = await request(target.url, {
    method: 'POST',
    body,
    dispatcher: target.dispatcher,
    headers: { 'content-type': 'application/json', ...(target.key ? { authorization: `bearer ${target.key}` } : {}) },
  });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new StartupError(`${target.url} answered ${response.statusCode}: ${text.slice(0, 500)}`);
  const answer = JSON.parse(text) as Partial<ScoreAnswer>;
  if (!Array.isArray(answer.result) || answer.result.length !== CLASS_COUNT || typeof answer.time !== 'number') {
    throw new StartupError(`${target.url} answered without 1000 results and a time`);
  }
  return answer as ScoreAnswer;
}
