/** Test inputs made at test time: deterministic random numbers, tensors, mutations, drawn pictures. */
import { spawn } from 'node:child_process';
import sharp from 'sharp';
import { imageToPixels, scoreRequestBody } from '../../src/scoring/client.ts';
// The project's one seeded generator (mulberry32), so a failing fuzz case can be replayed.
export { seededRandom } from '../../src/common/random.ts';

export function nestedTensor<T>(shape: readonly number[], value: () => T): unknown {
  const [dim, ...rest] = shape;
  if (dim === undefined) return value();
  return Array.from({ length: dim }, () => nestedTensor(rest, value));
}

/** Number tokens in the many spellings JSON allows (as strings, to keep their spelling). */
export function randomNumberText(random: () => number): string {
  const sign = random() < 0.3 ? '-' : '';
  switch (Math.floor(random() * 7)) {
    case 0:
      return sign + String(Math.floor(random() * 256));
    case 1:
      return sign + (random() * 3).toFixed(Math.floor(random() * 8) + 1);
    case 2:
      return sign + String(random());
    case 3:
      return sign + String(Math.fround(random() * 1000));
    case 4:
      return `${sign}${Math.floor(random() * 99) + 1}e${random() < 0.5 ? '-' : '+'}${Math.floor(random() * 30)}`;
    case 5:
      return sign + (random() * 1e-3).toPrecision(Math.floor(random() * 21) + 1);
    default:
      return `${sign}${Math.floor(random() * 9) + 1}.${'0'.repeat(Math.floor(random() * 20))}${Math.floor(random() * 1e9)}E${Math.floor(random() * 10)}`;
  }
}

const NOISE = [
  '',
  ' ',
  '[',
  ']',
  '{',
  '}',
  ',',
  ':',
  '"',
  '-',
  '.',
  'e',
  '0',
  '01',
  '1.',
  'NaN',
  'null',
  'true',
  '\\',
  '\u0000',
  '\u00ff',
  '1e999',
  '"x"',
  '[]',
  '\n',
];

/** One random edit: drop, insert, replace or duplicate a stretch of the text. */
export function mutate(text: string, random: () => number): string {
  const at = Math.floor(random() * text.length);
  const noise = NOISE[Math.floor(random() * NOISE.length)]!;
  switch (Math.floor(random() * 5)) {
    case 0:
      return text.slice(0, at) + text.slice(at + 1 + Math.floor(random() * 3));
    case 1:
      return text.slice(0, at) + noise + text.slice(at);
    case 2:
      return text.slice(0, at) + noise + text.slice(at + 1);
    case 3:
      return text.slice(0, at);
    default: {
      const end = Math.min(text.length, at + 1 + Math.floor(random() * 12));
      return text.slice(0, end) + text.slice(at, end) + text.slice(end);
    }
  }
}

/** Edits that break any valid scoring body (its only string is the "data" name), whatever the place. */
const BREAKERS: ((body: Buffer, at: number, random: () => number) => Buffer)[] = [
  // cut short: a JSON object cannot end early
  (body, at) => body.subarray(0, at),
  // an unbalanced bracket or brace, or a stray colon
  (body, at, random) => Buffer.concat([body.subarray(0, at), Buffer.from(']}:'[Math.floor(random() * 3)]!), body.subarray(at)]),
  // a byte that has no place in JSON outside a string (or breaks the "data" name inside it)
  (body, at, random) => Buffer.concat([body.subarray(0, at), Buffer.from([[0x00, 0x01, 0x1f, 0x7f][Math.floor(random() * 4)]!]), body.subarray(at)]),
  // a number replaced by something that is not a finite JSON number
  (body, at, random) => {
    const start = body.indexOf(',', Math.max(at, 12)) + 1 || 12;
    let end = start;
    while (body[end]! >= 0x30 && body[end]! <= 0x39) end++;
    const token = ['null', 'true', '"7"', 'NaN', '1e999', '-', '01', '1.', '.5', '+1', '0x1F', '[1]', '{}', ''][Math.floor(random() * 14)]!;
    return Buffer.concat([body.subarray(0, start), Buffer.from(token), body.subarray(end)]);
  },
];

export function breakBody(valid: Buffer, random: () => number): Buffer {
  const at = Math.floor(random() * (valid.length - 2)) + 1;
  return BREAKERS[Math.floor(random() * BREAKERS.length)]!(valid, at, random);
}

/**
 * Pictures drawn at test time that the default model knows at once: a honeycomb
 * of hexagonal cells (class 599 "honeycomb") and a crossword grid (918 "crossword_puzzle").
 */
export function honeycombSvg(size = 320): Buffer {
  const cells: string[] = [];
  for (let row = 0; row < Math.ceil(size / 22) + 1; row++) {
    for (let col = 0; col < Math.ceil(size / 26) + 1; col++) {
      const cx = col * 26 + (row % 2) * 13;
      const cy = row * 22;
      const points = Array.from({ length: 6 }, (_, k) => {
        const angle = (Math.PI / 3) * k + Math.PI / 6;
        return `${(cx + 14 * Math.cos(angle)).toFixed(2)},${(cy + 14 * Math.sin(angle)).toFixed(2)}`;
      }).join(' ');
      cells.push(`<polygon points="${points}" fill="#e0a020" stroke="#8a5a00" stroke-width="3"/>`);
    }
  }
  return Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}"><rect width="100%" height="100%" fill="#8a5a00"/>${cells.join('')}</svg>`,
  );
}

export function crosswordSvg(): Buffer {
  const squares: string[] = [];
  for (let y = 0; y < 15; y++) {
    for (let x = 0; x < 15; x++) {
      const black = (x * 7 + y * 13) % 5 === 0;
      squares.push(`<rect x="${x * 20}" y="${y * 20}" width="20" height="20" fill="${black ? 'black' : 'white'}" stroke="black" stroke-width="1"/>`);
    }
  }
  return Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="300" height="300">${squares.join('')}</svg>`);
}

/** The drawing as an image file in the given format, as a client would have it on disk. */
export async function pictureFile(svg: Buffer, format: 'jpeg' | 'png' | 'webp'): Promise<Buffer> {
  return sharp(svg).toFormat(format).toBuffer();
}

const BIN = new URL('../../bin/offcloud.js', import.meta.url).pathname;

/** Runs the real `offcloud` binary; resolves with its exit code and output. */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A scoring request body for a drawing, through the same path the client takes. */
export async function pictureBody(svg: Buffer, format: 'integers' | 'floats' = 'integers'): Promise<string> {
  return scoreRequestBody(await imageToPixels(svg), format);
}

export function argmax(values: readonly number[]): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! > values[best]!) best = i;
  return best;
}

/** Indices of the k largest values, largest first. */
export function topIndices(values: readonly number[], k: number): number[] {
  return values
    .map((v, i) => [v, i] as const)
    .sort((a, b) => b[0] - a[0])
    .slice(0, k)
    .map(([, i]) => i);
}

/** What JSON.parse makes of a body, reduced to the same question: which float32 tensor, or an error. */
export function jsonParseTensor(body: string, shape: readonly number[]): Float32Array | 'error' {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return 'error';
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || !('data' in parsed)) return 'error';
  const out: number[] = [];
  const walk = (value: unknown, level: number): boolean => {
    if (level === shape.length) {
      if (typeof value !== 'number') return false;
      out.push(value);
      return true;
    }
    return Array.isArray(value) && value.length === shape[level] && value.every((v) => walk(v, level + 1));
  };
  if (!walk((parsed as { data: unknown }).data, 0)) return 'error';
  const values = Float32Array.from(out);
  return values.every(Number.isFinite) ? values : 'error';
}
