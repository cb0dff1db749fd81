/** The /score answer's JSON writer: nine significant digits, JSON's number grammar, float32 values given back exactly. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { scoreAnswer, writeNumber } from '../../src/scoring/answer.ts';
import { softmax } from '../../src/scoring/classifier.ts';
import { seededRandom } from '../../src/common/random.ts';

const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

function written(v: number): string {
  const out = Buffer.alloc(64);
  return out.toString('latin1', 0, writeNumber(out, 0, v));
}

/** One unit of the ninth significant digit of v. */
function ninthDigitUnit(v: number): number {
  return 10 ** (Math.floor(Math.log10(Math.abs(v))) - 8);
}

test('numbers are written as JSON numbers, exactly where the digits are few', () => {
  const cases: [number, string][] = [
    [0, '0'],
    [-0, '0'],
    [1, '1'],
    [0.5, '0.5'],
    [-2.25, '-2.25'],
    [100, '100'],
    [123456789, '123456789'],
    [1234567890, '1.23456789e9'],
    [12345.678901, '12345.6789'],
    [0.000001, '0.000001'],
    [0.0000012345, '0.0000012345'],
    [1e-7, '1e-7'],
    [2.5e-12, '2.5e-12'],
    [0.1 + 0.2, '0.3'],
    [9.9999999995e-5, '0.0001'],
    [0.99999999996, '1'],
    [1.7976931348623157e308, '1.79769313e308'],
    [5e-324, '4.94065646e-324'],
    [Number.NaN, 'null'],
    [Infinity, 'null'],
    [-Infinity, 'null'],
  ];
  for (const [value, text] of cases) assert.equal(written(value), text, `${value}`);
});

test('random doubles of every magnitude: JSON grammar, within half a unit of the ninth digit, next to toPrecision(9)', () => {
  const random = seededRandom(9);
  for (let i = 0; i < 50_000; i++) {
    const magnitude = 10 ** (random() * 620 - 320);
    const v = (random() < 0.5 ? -1 : 1) * magnitude * (1 + random());
    if (!Number.isFinite(v) || v === 0) continue;
    const text = written(v);
    assert.match(text, JSON_NUMBER, `${v}`);
    const back = Number(text);
    const unit = ninthDigitUnit(v);
    assert.ok(Math.abs(back - v) <= unit / 2 + unit * 1e-6 + 5e-324, `${v} → ${text}`);
    // toPrecision rounds exactly; the scaled estimate may differ from it in the ninth digit by one at most.
    assert.ok(Math.abs(back - Number(v.toPrecision(9))) <= unit * 1.000001, `${v} → ${text}, toPrecision ${v.toPrecision(9)}`);
  }
});

test('every float32 value comes back exactly from its nine digits (what the model gives is not rounded away)', () => {
  const random = seededRandom(32);
  const bits = new Uint32Array(1);
  const asFloat = new Float32Array(bits.buffer);
  let checked = 0;
  while (checked < 100_000) {
    bits[0] = Math.floor(random() * 2 ** 32);
    const v = asFloat[0]!;
    if (!Number.isFinite(v)) continue;
    assert.equal(Math.fround(Number(written(v))), v, `float32 ${v} → ${written(v)}`);
    checked++;
  }
});

test('R-SCORE-3 the written answer {"result": [...], "time": s} parses as JSON: 1000 probabilities in class-index order summing to 1', () => {
  const random = seededRandom(1000);
  const logits = Float32Array.from({ length: 1000 }, () => (random() - 0.5) * 30);
  const probabilities = softmax(logits);
  const answer = JSON.parse(scoreAnswer(probabilities, 0.00612).toString('utf8')) as { result: number[]; time: number };
  assert.deepEqual(Object.keys(answer), ['result', 'time']);
  assert.equal(answer.time, 0.00612);
  assert.equal(answer.result.length, 1000);
  assert.ok(Math.abs(answer.result.reduce((a, b) => a + b, 0) - 1) < 1e-6);
  for (let i = 0; i < 1000; i++) assert.ok(Math.abs(answer.result[i]! - probabilities[i]!) <= ninthDigitUnit(probabilities[i]!) / 2 + 1e-300);
  assert.equal(scoreAnswer([], 1).toString(), '{"result":[],"time":1}');
});
