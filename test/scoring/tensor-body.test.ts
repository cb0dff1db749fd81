import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  INPUT_LAYOUT,
  INPUT_SHAPE,
  MAX_NESTING,
  readTensorBody,
  TensorBodyStream,
  TensorLayout,
  type ChannelTransform,
  type TensorBody,
} from '../../src/scoring/tensor-body.ts';
import { ScoringError } from '../../src/scoring/errors.ts';
import { channelTransform, normalizeInput, readerPixelTransform } from '../../src/scoring/classifier.ts';
import { jsonParseTensor, mutate, nestedTensor, randomNumberText, seededRandom } from './fixtures.ts';

/** The layout of a `data` tensor of this shape, as a server makes one. */
const layoutOf = (shape: readonly number[]) => new TensorLayout(shape, 'data');

const SMALL = [1, 3, 4, 5];

function ours(body: string, shape: readonly number[]): Float32Array | 'error' {
  try {
    return readTensorBody(Buffer.from(body), layoutOf(shape)).values;
  } catch (err) {
    assert.ok(err instanceof ScoringError, `not a ScoringError: ${String(err)}`);
    assert.equal(err.status, 400);
    return 'error';
  }
}

function sameBits(a: Float32Array, b: Float32Array): boolean {
  return a.length === b.length && Buffer.from(a.buffer).equals(Buffer.from(b.buffer));
}

test('R-SCORE-1 random valid tensors parse to exactly the float32 of what JSON.parse gives', () => {
  const random = seededRandom(1);
  for (let i = 0; i < 400; i++) {
    const body = JSON.stringify({ data: nestedTensor(SMALL, () => randomNumberText(random)) }).replace(/"(-?[0-9][^"]*)"/g, '$1');
    const expected = jsonParseTensor(body, SMALL);
    const got = ours(body, SMALL);
    assert.notEqual(expected, 'error', body);
    assert.ok(got !== 'error' && expected !== 'error' && sameBits(got, expected), `mismatch for ${body}`);
  }
});

test('R-SCORE-1 a full [1,3,224,224] body of 17-digit doubles parses bit for bit like JSON.parse', () => {
  const random = seededRandom(2);
  const body = JSON.stringify({ data: nestedTensor(INPUT_SHAPE, () => random() * 2.4 - 0.3) });
  const expected = jsonParseTensor(body, INPUT_SHAPE);
  const got = readTensorBody(Buffer.from(body));
  assert.ok(expected !== 'error' && sameBits(got.values, expected));
  assert.equal(got.allIntegers, false);
});

test('R-SCORE-1 numbers at float32 ties and edges round like JSON.parse then float32', () => {
  const tokens = [
    '0',
    '-0',
    '-0.0',
    '255',
    '1e2',
    '1E+2',
    '2.5e-3',
    '0.1',
    '16777217',
    '16777216.999999999999999',
    '1.00000005960464477539062',
    '1.000000059604644775390625',
    '1.0000000596046447753906251',
    '3.4028235677973366e38',
    '3.4028234663852886e38',
    '1.401298464324817e-45',
    '7.006492321624085e-46',
    '7.006492321624086e-46',
    '123456789012345678901234567890',
    '0.000000000000000000000000000001',
    '9007199254740993',
    '4.9406564584124654e-324',
    '0.30000000000000004',
    '1.1754943508222875e-38',
    '-1.7976931348623157e308e0'.slice(0, 24),
  ];
  for (const token of tokens) {
    const body = `{"data":[[[[${token}]]]]}`;
    assert.deepEqual(ours(body, [1, 1, 1, 1]), jsonParseTensor(body, [1, 1, 1, 1]), token);
  }
});

test('R-SCORE-1 long tokens right beside float32 ties round like JSON.parse then float32', () => {
  const random = seededRandom(4);
  const shape = [1, 1, 1, 1];
  const scratch = new Float32Array(1);
  const bits = new Uint32Array(scratch.buffer);
  for (let i = 0; i < 3000; i++) {
    scratch[0] = random() * 300;
    const low = scratch[0]!;
    bits[0]! += 1;
    const tie = (low + scratch[0]!) / 2; // exact in a double: the float32 midpoint
    const nudge = [0, 1e-13, -1e-13, 1e-16, -1e-16][i % 5]!;
    const token = (tie * (1 + nudge)).toPrecision(17 + (i % 5));
    const body = `{"data":[[[[${token}]]]]}`;
    assert.deepEqual(ours(body, shape), jsonParseTensor(body, shape), token);
  }
});

test('R-SCORE-2 1,000 fuzzed bodies: accepted exactly when JSON.parse gives a finite tensor of the shape, else 400', () => {
  const random = seededRandom(3);
  const valid = JSON.stringify({ note: ['x', { a: null }], data: nestedTensor(SMALL, () => randomNumberText(random)) }).replace(/"(-?[0-9][^"]*)"/g, '$1');
  let rejected = 0;
  for (let i = 0; i < 1000; i++) {
    const body = mutate(valid, random);
    const expected = jsonParseTensor(body, SMALL);
    const got = ours(body, SMALL);
    if (expected === 'error') {
      assert.equal(got, 'error', `accepted a bad body: ${body}`);
      rejected++;
    } else assert.ok(got !== 'error' && sameBits(got, expected), `differs from JSON.parse on ${body}`);
  }
  assert.ok(rejected > 700, `only ${rejected} of the fuzzed bodies were malformed`);
});

test('R-SCORE-2 errors name the path and the expected shape', () => {
  const cases: [string, RegExp][] = [
    ['', /empty/],
    ['[1,2]', /must be a JSON object/],
    ['{"other": 1}', /no "data" member/],
    ['{"data": [[[[1,2,3,4,5]]]]}', /data\[0\]\[0\] has 1 entries; expected 4 \(shape \[1,3,4,5\]\)/],
    ['{"data": [[[[1,2,3,4,5,6]]]]}', /data\[0\]\[0\]\[0\] has more than 5 entries/],
    ['{"data": [[[[1,"2",3,4,5]]]]}', /data\[0\]\[0\]\[0\]\[1\] is a string; expected a number/],
    ['{"data": [[[[1,NaN,3,4,5]]]]}', /data\[0\]\[0\]\[0\]\[1\] is NaN, which JSON does not have/],
    ['{"data": [[[[1,Infinity]]]]}', /is Infinity/],
    ['{"data": [[[[1,[2],3]]]]}', /data\[0\]\[0\]\[0\]\[1\] is an array; expected a number/],
    ['{"data": [[[[1e39]]]]}', /outside the range of a 32-bit float/],
    ['{"data": [[[[1,2', /invalid JSON at byte 16: expected/],
    ['{"data": 5}', /data is a number; expected an array of 1 arrays/],
    ['{"data": [], "data": []}', /has 0 entries/],
    [`{"x": ${'['.repeat(MAX_NESTING + 1)}${']'.repeat(MAX_NESTING + 1)}, "data": []}`, /nests deeper than 64/],
    ['\ufeff{"data": []}', /must be a JSON object|invalid JSON/],
  ];
  for (const [body, message] of cases) {
    assert.throws(
      () => readTensorBody(Buffer.from(body), layoutOf(SMALL)),
      (err: unknown) => err instanceof ScoringError && err.status === 400 && message.test(err.message),
      body,
    );
  }
  const error = (() => {
    try {
      readTensorBody(Buffer.from('{"data": [[[[1,2,3,4,5]],[]]]}'), layoutOf(SMALL));
    } catch (err) {
      return err as ScoringError;
    }
    return undefined;
  })();
  assert.equal(error?.path, 'data[0][0]');
});

test('R-SCORE-5 integer and float tokens are told apart, with the value range', () => {
  const ints = readTensorBody(Buffer.from('{"data":[[[[0, 255, 17]]]]}'), layoutOf([1, 1, 1, 3]));
  assert.deepEqual([ints.allIntegers, ints.min, ints.max], [true, 0, 255]);
  const floats = readTensorBody(Buffer.from('{"data":[[[[0.5, 1.0, 1e-1]]]]}'), layoutOf([1, 1, 1, 3]));
  assert.deepEqual([floats.allIntegers, floats.min, floats.max], [false, Math.fround(0.1), 1]);
});

test('R-SCORE-1 escaped member names and ignored members are read like JSON.parse reads them', () => {
  const body = '{"meta": {"a": [1, true, false, null, "\\u00e9\\n"]}, "d\\u0061ta": [[[[7]]]], "z": -0.5e-3}';
  assert.deepEqual(Array.from(readTensorBody(Buffer.from(body), layoutOf([1, 1, 1, 1])).values), [7]);
});

/** A body pushed to a TensorBodyStream in the given pieces; the tensor, or 'error' (a 400 ScoringError). */
function streamed(pieces: Buffer[], shape: readonly number[], asItArrives = false): Float32Array | 'error' {
  const stream = new TensorBodyStream(layoutOf(shape));
  try {
    for (const piece of pieces) stream.push(piece);
    const values = stream.end().values;
    if (asItArrives) assert.ok(stream.readAsItArrived, 'read at the end instead of as it arrived');
    return values;
  } catch (err) {
    assert.ok(err instanceof ScoringError && err.status === 400, `not a 400 ScoringError: ${String(err)}`);
    return 'error';
  }
}

function splitAt(body: Buffer, ...cuts: number[]): Buffer[] {
  const points = [0, ...cuts, body.length];
  return points.slice(1).map((end, i) => Buffer.from(body.subarray(points[i], end)));
}

test('R-SCORE-1 a body fed in two pieces, cut at every byte, reads exactly like the whole body', () => {
  const random = seededRandom(5);
  const bodies = [
    JSON.stringify({ data: nestedTensor(SMALL, () => randomNumberText(random)) }).replace(/"(-?[0-9][^"]*)"/g, '$1'),
    ` { "data" : ${JSON.stringify(nestedTensor(SMALL, () => Math.floor(random() * 256))).replace(/,/g, ', ')} } \n`,
    JSON.stringify({ note: 'x', data: nestedTensor(SMALL, () => random()) }),
    JSON.stringify({ data: nestedTensor(SMALL, () => 7) }) + 'x',
  ];
  for (const text of bodies) {
    const body = Buffer.from(text);
    const expected = ours(text, SMALL);
    for (let cut = 0; cut <= body.length; cut++) {
      const got = streamed(splitAt(body, cut), SMALL, text.startsWith(' {'));
      assert.ok(expected === 'error' ? got === 'error' : got !== 'error' && sameBits(got, expected), `cut at ${cut} of ${text}`);
    }
  }
});

test('R-SCORE-2 fuzzed bodies fed in random pieces: accepted exactly when JSON.parse gives a finite tensor, with the same values', () => {
  const random = seededRandom(6);
  const valid = JSON.stringify({ data: nestedTensor(SMALL, () => randomNumberText(random)) }).replace(/"(-?[0-9][^"]*)"/g, '$1');
  for (let i = 0; i < 1000; i++) {
    const text = i % 4 === 0 ? valid : mutate(valid, random);
    const body = Buffer.from(text);
    const cuts = Array.from({ length: 1 + Math.floor(random() * 6) }, () => Math.floor(random() * (body.length + 1))).sort((a, b) => a - b);
    const expected = jsonParseTensor(text, SMALL);
    const got = streamed(splitAt(body, ...cuts), SMALL);
    assert.ok(expected === 'error' ? got === 'error' : got !== 'error' && sameBits(got, expected), `pieces cut at ${cuts.join(',')} of ${text}`);
  }
});

test('R-SCORE-1 full-size bodies of pixel integers, short decimals and spaced separators, whole and in socket-sized pieces, parse like JSON.parse', () => {
  const random = seededRandom(7);
  const spellings: [string, () => unknown, (json: string) => string][] = [
    ['pixel integers', () => Math.floor(random() * 256), (json) => json],
    ['4-decimal floats', () => Number(random().toFixed(4)), (json) => json],
    ['negative normalised floats', () => Number((random() * 4 - 2).toFixed(6)), (json) => json],
    ['integers with ", " separators', () => Math.floor(random() * 256), (json) => json.replace(/,/g, ', ')],
    ['integers with newlines', () => Math.floor(random() * 256), (json) => json.replace(/\],/g, '],\n  ')],
    ['mixed spellings', () => randomNumberText(random), (json) => json.replace(/"(-?[0-9][^"]*)"/g, '$1')],
  ];
  for (const [label, value, respell] of spellings) {
    const text = respell(JSON.stringify({ data: nestedTensor(INPUT_SHAPE, value) }));
    const body = Buffer.from(text);
    const expected = jsonParseTensor(text, INPUT_SHAPE);
    if (expected === 'error') return assert.fail(`${label}: JSON.parse refused the body`);
    const whole = readTensorBody(body);
    assert.ok(sameBits(whole.values, expected), `${label}: whole body`);
    for (const size of [65536, 16384, 1000 + Math.floor(random() * 100)]) {
      const pieces: Buffer[] = [];
      for (let at = 0; at < body.length; at += size) pieces.push(body.subarray(at, at + size));
      const got = streamed(pieces, INPUT_SHAPE, true);
      assert.ok(got !== 'error' && sameBits(got, expected), `${label}: ${size}-byte pieces`);
    }
    assert.equal(whole.allIntegers, label.includes('integers'), label);
  }
});

test('R-SCORE-5 pixel integers 0..999 read in the 4-byte fast path give exact values and range', () => {
  const row = Array.from({ length: 40 }, (_, i) => [0, 7, 10, 99, 100, 255, 999, 5][i % 8]);
  const body = `{"data":[[[${JSON.stringify(row)}]]]}`;
  const got = readTensorBody(Buffer.from(body), layoutOf([1, 1, 1, 40]));
  assert.deepEqual(Array.from(got.values), row);
  assert.deepEqual([got.allIntegers, got.min, got.max], [true, 0, 999]);
  for (const bad of ['[00,1]', '[01,1]', '[1,,2]', '[1 2]', '[1,2,]', '[-,1]', '[1.,2]']) {
    assert.throws(() => readTensorBody(Buffer.from(`{"data":[[[${bad}${',1'.repeat(40)}]]]}`), layoutOf([1, 1, 1, 42])), ScoringError, bad);
  }
});

test('R-SCORE-5 a body of pixel integers read with the pixel transform holds exactly what normalizeInput writes; any other number undoes it', () => {
  const random = seededRandom(8);
  const mean = [0.485, 0.456, 0.406];
  const std = [0.229, 0.224, 0.225];
  const pixels = readerPixelTransform('auto', mean, std)!;
  const check = (label: string, text: string, applied: boolean) => {
    const body = Buffer.from(text);
    const raw = readTensorBody(body);
    const expected = Float32Array.from(raw.values);
    if (applied) normalizeInput(expected, 'pixels', mean, std);
    const pieces: Buffer[] = [];
    for (let at = 0; at < body.length; at += 4093) pieces.push(body.subarray(at, at + 4093));
    const stream = new TensorBodyStream(INPUT_LAYOUT, pixels);
    for (const piece of pieces) stream.push(piece);
    for (const got of [readTensorBody(body, INPUT_LAYOUT, pixels), stream.end()]) {
      assert.equal(got.pixelsApplied, applied, label);
      assert.ok(sameBits(got.values, expected), label);
      assert.deepEqual([got.allIntegers, got.min, got.max], [raw.allIntegers, raw.min, raw.max], label);
    }
  };
  const pixelsBody = JSON.stringify({ data: nestedTensor(INPUT_SHAPE, () => Math.floor(random() * 256)) });
  check('pixel integers', pixelsBody, true);
  check('pixel integers with one float at the end', pixelsBody.replace(/(\d+)\]\]\]\]\}$/, '$1.5]]]]}'), false);
  check('pixel integers with one 4-digit integer in the middle', pixelsBody.replace(/,(\d+),/, ',1000,'), false);
  check(
    'unit floats written as JSON.stringify writes 0 and 1',
    JSON.stringify({ data: nestedTensor(INPUT_SHAPE, () => [0, 1, random()][Math.floor(random() * 3)]) }),
    false,
  );
  const shape = [1, 3, 2, 40];
  const small = JSON.stringify({ data: nestedTensor(shape, () => Math.floor(random() * 256)) });
  assert.equal(readTensorBody(Buffer.from(small), layoutOf(shape), pixels).pixelsApplied, true);
  assert.equal(readTensorBody(Buffer.from(small), layoutOf(shape)).pixelsApplied, false);
  assert.equal(
    readTensorBody(Buffer.from(JSON.stringify({ data: [[[[7]]]] })), layoutOf([1, 1, 1, 1]), pixels).pixelsApplied,
    false,
    'one channel, three tables',
  );
});

const PIXEL_MEAN = [0.485, 0.456, 0.406];
const PIXEL_STD = [0.229, 0.224, 0.225];

/** A body read whole and in the given pieces (with the pixel transform when given): the tensor, or the 400's message. */
function readWholeAndStreamed(body: Buffer, cuts: number[], shape: readonly number[], pixels?: ChannelTransform): [TensorBody | string, TensorBody | string] {
  const outcome = (read: () => TensorBody): TensorBody | string => {
    try {
      return read();
    } catch (err) {
      assert.ok(err instanceof ScoringError && err.status === 400, `not a 400 ScoringError: ${String(err)}`);
      return err.message;
    }
  };
  const whole = outcome(() => readTensorBody(body, layoutOf(shape), pixels));
  const stream = new TensorBodyStream(layoutOf(shape), pixels);
  const pieces = outcome(() => {
    for (const piece of splitAt(body, ...cuts)) stream.push(piece);
    return stream.end();
  });
  return [whole, pieces];
}

/** What a reader must give for a body JSON.parse reads as `expected` from these tokens: values, range, integers, transform. */
function assertReadLike(
  got: TensorBody | string,
  expected: Float32Array,
  tokens: string[],
  shape: readonly number[],
  pixels: ChannelTransform | undefined,
  label: string,
): void {
  assert.ok(typeof got !== 'string', `${label}: refused (${String(got)})`);
  const applied = pixels !== undefined && shape[1] === pixels.scale.length && tokens.every((token) => /^(0|[1-9][0-9]{0,2})$/.test(token));
  const values = Float32Array.from(expected);
  if (applied) normalizeInput(values, 'pixels', PIXEL_MEAN, PIXEL_STD);
  assert.equal(got.pixelsApplied, applied, `${label}: pixelsApplied`);
  assert.ok(sameBits(got.values, values), `${label}: values`);
  // (=== as the reader compares: 0 and -0 are the same least value.)
  assert.ok(got.min === Math.min(...expected) && got.max === Math.max(...expected), `${label}: range ${got.min}..${got.max}`);
  assert.equal(
    got.allIntegers,
    tokens.every((token) => /^-?[0-9]+$/.test(token)),
    `${label}: allIntegers`,
  );
}

test('R-SCORE-1 rows of pixel-like tokens of every length, spacing and spelling, whole and in random pieces, with and without the pixel transform, read like JSON.parse with the same range', () => {
  const random = seededRandom(9);
  const pixels = readerPixelTransform('auto', PIXEL_MEAN, PIXEL_STD)!;
  const odd = ['0', '1000', '12345', '-0', '-7', '7.0', '2.5', '1e2', '00', '01', '007', '-', '1.', '.5', '+1', '', '9\u00ff', 'null', '"7"'];
  const separators = [',', ', ', ' ,', ',\n', ',  ', '\t,\t', ' , '];
  let accepted = 0;
  for (let i = 0; i < 600; i++) {
    const shape = [
      [1, 3, 2, 7],
      [1, 3, 1, 40],
      [1, 1, 3, 5],
    ][i % 3]!;
    const style = separators[Math.floor(random() * separators.length)]!;
    const tokens: string[] = [];
    const array = (level: number): string => {
      const entries = Array.from({ length: shape[level]! }, () => {
        if (level < shape.length - 1) return array(level + 1);
        // One to three digits most of the time, as a pixel run reads them; now and then anything else.
        const token = random() < 0.98 ? String(Math.floor(random() * [10, 100, 1000][Math.floor(random() * 3)]!)) : odd[Math.floor(random() * odd.length)]!;
        tokens.push(token);
        return token;
      });
      const separator = level < shape.length - 1 ? ',' : random() < 0.9 ? style : separators[Math.floor(random() * separators.length)]!;
      return `[${entries.join(separator)}]`;
    };
    const text = `{"data":${array(0)}}`;
    const body = Buffer.from(text);
    const expected = jsonParseTensor(text, shape);
    const cuts = Array.from({ length: 1 + Math.floor(random() * 12) }, () => Math.floor(random() * (body.length + 1))).sort((a, b) => a - b);
    for (const transform of [undefined, pixels]) {
      const [whole, pieces] = readWholeAndStreamed(body, cuts, shape, transform);
      const label = `${text} cut at ${cuts.join(',')}${transform ? ' with the pixel transform' : ''}`;
      if (expected === 'error') {
        assert.ok(typeof whole === 'string', `${label}: accepted a bad body`);
        assert.equal(pieces, whole, `${label}: another error in pieces`);
      } else {
        assertReadLike(whole, expected, tokens, shape, transform, `${label}, whole`);
        assertReadLike(pieces, expected, tokens, shape, transform, `${label}, in pieces`);
      }
    }
    if (expected !== 'error') accepted++;
  }
  assert.ok(accepted > 200 && accepted < 500, `${accepted} of the bodies were valid`);
});

test('R-SCORE-5 every pixel integer 0..999, in rows cut at every byte, reads exactly with its range, the pixel transform applied', () => {
  const random = seededRandom(10);
  const pixels = readerPixelTransform('auto', PIXEL_MEAN, PIXEL_STD)!;
  const shape = [1, 3, 1, 1000];
  const rows = [0, 1, 2].map(() => {
    const row = Array.from({ length: 1000 }, (_, v) => v);
    for (let i = row.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [row[i], row[j]] = [row[j]!, row[i]!];
    }
    return row;
  });
  const text = JSON.stringify({ data: [rows.map((row) => [row])] });
  const body = Buffer.from(text);
  const expected = jsonParseTensor(text, shape);
  if (expected === 'error') return assert.fail('JSON.parse refused the body');
  assertReadLike(readTensorBody(body, layoutOf(shape), pixels), expected, rows.flat().map(String), shape, pixels, 'whole');
  const values = Float32Array.from(expected);
  normalizeInput(values, 'pixels', PIXEL_MEAN, PIXEL_STD);
  for (let cut = 1; cut < body.length; cut++) {
    const stream = new TensorBodyStream(layoutOf(shape), pixels);
    for (const piece of splitAt(body, cut)) stream.push(piece);
    const got = stream.end();
    assert.ok(got.pixelsApplied && sameBits(got.values, values), `cut at ${cut}: values`);
    assert.deepEqual([got.min, got.max, got.allIntegers], [0, 999, true], `cut at ${cut}: range`);
  }
});

test('R-SCORE-2 near-pixel tokens inside a run of pixels are refused or read exactly as JSON.parse does them, with the same error wherever the body is cut', () => {
  const shape = [1, 1, 1, 12];
  // The token is the eighth entry, at byte 33: well inside a run, which goes on after it.
  const cases: [string, string | null][] = [
    ['0', null],
    ['999', null],
    ['1000', null],
    ['-0', null],
    ['7.0', null],
    [' 5', null],
    ['5 ', null],
    ['\t5\n', null],
    ['00', "invalid JSON at byte 34: expected ',' or ']', found '0'"],
    ['01', "invalid JSON at byte 34: expected ',' or ']', found '1'"],
    ['', "invalid JSON at byte 33: expected a number, found ','"],
    [' ', "invalid JSON at byte 34: expected a number, found ','"],
    ['-', "invalid JSON at byte 34: expected a digit, found ','"],
    ['1.', "invalid JSON at byte 35: expected a digit after the decimal point, found ','"],
    ['9\u00ff', "invalid JSON at byte 34: expected ',' or ']', found byte 0xc3"],
    ['5,6', 'data[0][0][0] has more than 12 entries; expected 12 (shape [1,1,1,12])'],
    ['5,6,7', 'data[0][0][0] has more than 12 entries; expected 12 (shape [1,1,1,12])'],
  ];
  for (const [token, error] of cases) {
    const text = `{"data":[[[[17,255,0,9,10,99,100,${token},1,2,30,45]]]]}`;
    const body = Buffer.from(text);
    const expected = jsonParseTensor(text, shape);
    assert.equal(expected === 'error', error !== null, `${JSON.stringify(token)}: JSON.parse disagrees with the case`);
    for (let cut = 0; cut <= body.length; cut++) {
      const [whole, pieces] = readWholeAndStreamed(body, [cut], shape);
      const label = `${JSON.stringify(token)} cut at ${cut}`;
      if (expected === 'error') {
        assert.equal(whole, error, label);
        assert.equal(pieces, whole, label);
      } else {
        assert.ok(typeof whole !== 'string' && typeof pieces !== 'string', `${label}: refused`);
        assert.ok(sameBits(whole.values, expected) && sameBits(pieces.values, expected), label);
      }
    }
  }
});

test('R-SCORE-1 a body is read once: members after the tensor are read from where it ends, and an error is found as the body arrives, each as the whole body reads it', () => {
  const random = seededRandom(12);
  const pixels = readerPixelTransform('auto', PIXEL_MEAN, PIXEL_STD)!;
  const tensor = JSON.stringify(nestedTensor(INPUT_SHAPE, () => Math.floor(random() * 256)));
  const start = '{"data": ';
  const end = start.length + tensor.length;
  const at = (offset: number) => `invalid JSON at byte ${offset}`;
  // [the body, the error readTensorBody gives (null: read), where the piece kept as it is starts]
  const cases: [string, string | null, number][] = [
    [`${start}${tensor}, "id": "r\\u00e9q-1", "meta": {"a": [1, true, false, null, -0.5e-3, []], "b": {}}}`, null, end],
    [`${start}${tensor} , "id" : 7 } \n`, null, end],
    [`${start}${tensor}, "data": []}`, '"data" appears twice', end],
    [`${start}${tensor}, "id": "x",}`, `${at(end + 12)}: expected a member name in double quotes, found '}'`, end],
    [`${start}${tensor}, "id": NaN}`, `${at(end + 8)}: expected a JSON value, found 'N'`, end],
    [`${start}${tensor}} "id"`, `${at(end + 2)}: expected the end of the body, found '"'`, end],
    [`${start}${tensor.replace(/,(\d+)\]\],\[\[/, ',"$1"]],[[')}}`, 'data[0][0][223][223] is a string; expected a number (shape [1,3,224,224])', end + 2],
  ];
  for (const [text, error, keptFrom] of cases) {
    const body = Buffer.from(text);
    const label = text.slice(end - 20, end + 40);
    const whole = readWholeAndStreamed(body, [], INPUT_SHAPE, pixels)[0];
    if (error !== null) assert.equal(whole, error, `${label}: whole`);
    else {
      const parsed = jsonParseTensor(text, INPUT_SHAPE);
      assert.ok(parsed !== 'error' && typeof whole !== 'string', `${label}: refused whole`);
      normalizeInput(parsed, 'pixels', PIXEL_MEAN, PIXEL_STD);
      assert.ok(whole.pixelsApplied && sameBits(whole.values, parsed), `${label}: whole differs from JSON.parse`);
    }
    // 64 KB pieces, each overwritten with '!' as soon as it is pushed, up to the piece kept as it is:
    // a reader that went back to them would find no JSON there.
    const pieces: Buffer[] = [];
    for (let from = 0; from < keptFrom; from += 65536) pieces.push(Buffer.from(body.subarray(from, Math.min(from + 65536, keptFrom))));
    pieces.push(Buffer.from(body.subarray(keptFrom)));
    const stream = new TensorBodyStream(INPUT_LAYOUT, pixels);
    let got: TensorBody | string;
    try {
      pieces.forEach((piece, i) => {
        stream.push(piece);
        if (i < pieces.length - 1) piece.fill(0x21);
      });
      got = stream.end();
    } catch (err) {
      assert.ok(err instanceof ScoringError && err.status === 400, `not a 400 ScoringError: ${String(err)}`);
      got = err.message;
    }
    if (typeof whole === 'string') assert.equal(got, whole, `${label}: another error in pieces`);
    else {
      assert.ok(stream.readAsItArrived, `${label}: the tensor was not read as it arrived`);
      assert.ok(typeof got !== 'string', `${label}: refused in pieces (${String(got)})`);
      assert.deepEqual([got.pixelsApplied, got.min, got.max, got.allIntegers], [true, whole.min, whole.max, true], label);
      assert.ok(sameBits(got.values, whole.values), `${label}: values differ from the whole body's`);
    }
  }
});

test("R-SCORE-2 a body refused in pieces gets the whole body's error, wherever it is cut (NaN and Infinity cut in two included)", () => {
  const random = seededRandom(13);
  const words = ['NaN', 'Infinity', '-Infinity', 'Inf', 'Na', 'Infinityx', 'NaNa', 'N', '"7"', 'nul', 'tru'];
  let refused = 0;
  for (let i = 0; i < 1500; i++) {
    const tensor = JSON.stringify(nestedTensor(SMALL, () => (random() < 0.7 ? String(Math.floor(random() * 256)) : randomNumberText(random)))).replace(
      /"(-?[0-9][^"]*)"/g,
      '$1',
    );
    let text = `{"data": ${tensor}${[' ', ', "id": "x"', ', "note": [1, {"a": null}], "z": -0.5e-3'][i % 3]}}`;
    if (i % 2) text = mutate(text, random);
    else {
      const at = 9 + Math.floor(random() * tensor.length);
      text = text.slice(0, at) + words[Math.floor(random() * words.length)] + text.slice(at + Math.floor(random() * 3));
    }
    const body = Buffer.from(text);
    const whole = readWholeAndStreamed(body, [], SMALL)[0];
    if (typeof whole === 'string') refused++;
    const cutSets =
      i % 30 === 0
        ? Array.from({ length: body.length + 1 }, (_, cut) => [cut])
        : [Array.from({ length: 1 + Math.floor(random() * 10) }, () => Math.floor(random() * (body.length + 1))).sort((a, b) => a - b)];
    for (const cuts of cutSets) {
      const got = readWholeAndStreamed(body, cuts, SMALL)[1];
      const label = `${text} cut at ${cuts.join(',')}`;
      if (typeof whole === 'string') assert.equal(got, whole, label);
      else assert.ok(typeof got !== 'string' && sameBits(got.values, whole.values), label);
    }
  }
  assert.ok(refused > 900, `only ${refused} of the bodies were refused`);
});

test('R-SCORE-5 one channel transform for the reader and normalizeInput: v·(k/std) − mean/std, k = 1/255 for pixels and 1 for 0..1 floats', () => {
  const pixels = channelTransform('pixels', PIXEL_MEAN, PIXEL_STD);
  for (const scale of ['auto', 'pixels'] as const) assert.deepEqual(readerPixelTransform(scale, PIXEL_MEAN, PIXEL_STD), pixels, scale);
  for (const scale of ['unit', 'normalized'] as const) assert.equal(readerPixelTransform(scale, PIXEL_MEAN, PIXEL_STD), undefined, scale);
  for (const [scale, k] of [
    ['pixels', 1 / 255],
    ['unit', 1],
  ] as const) {
    const values = Float32Array.from({ length: 12 }, (_, i) => (scale === 'pixels' ? i * 23 : i / 11));
    const c = (i: number) => Math.floor(i / 4);
    const expected = values.map((v, i) => v * (k / PIXEL_STD[c(i)]!) - PIXEL_MEAN[c(i)]! / PIXEL_STD[c(i)]!);
    normalizeInput(values, scale, PIXEL_MEAN, PIXEL_STD);
    assert.ok(sameBits(values, expected), scale);
  }
});
