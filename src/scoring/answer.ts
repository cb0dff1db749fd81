/**
 * The answer to POST /score as JSON bytes: `{"result": [...], "time": s}`.
 *
 * JSON.stringify spends most of its 0.3–0.5 ms per answer finding the
 * shortest digits that give back each of the 1000 doubles exactly. Those
 * doubles are computed from the model's float32 outputs, so only about
 * float32's precision in them means anything; nine significant digits are
 * enough to tell any two float32 values apart. The numbers are written here
 * with nine significant digits (fewer when the last ones are zeros), which
 * takes a fraction of the time and a third fewer bytes.
 */

/** Significant digits per number: what identifies any float32 value. */
export const SIGNIFICANT_DIGITS = 9;

const LOW = 1e8;
const HIGH = 1e9;
/** Largest bytes a number takes: sign, nine digits, point, and `e-324`, or the zeros of `0.000000`. */
const MAX_NUMBER_BYTES = 24;

// JSON's bytes, as tensor-values.ts has them: local copies, because a binding imported from
// another module costs a check at every use (0.25–0.28 ms per answer imported, 0.18–0.19 local).
const ZERO = 48;
const COMMA = 44;
const DOT = 46;
const MINUS = 45;
const LOWER_E = 101;

/** 10^k for k in -340..340, each the double nearest to it (as the JSON parser reads `1e<k>`). */
const POWERS_BIAS = 340;
const POWERS = Float64Array.from({ length: 2 * POWERS_BIAS + 1 }, (_, i) => Number(`1e${i - POWERS_BIAS}`));

/** v·10^k, for |k| ≤ 340, without overflowing for the smallest doubles (k above 308). */
function times10(v: number, k: number): number {
  return k > 300 ? v * 1e300 * POWERS[k - 300 + POWERS_BIAS]! : v * POWERS[k + POWERS_BIAS]!;
}

/** Writes the digits of `m` (a positive integer below 10^9) ending just before `end`. */
function writeDigits(out: Buffer, end: number, m: number): void {
  for (let at = end - 1; m > 0; at--) {
    const q = (m / 10) | 0;
    out[at] = ZERO + m - q * 10;
    m = q;
  }
}

/** Writes '0' at out[start..end) (a loop: Buffer.fill's checks cost more than a few bytes). */
function zeros(out: Buffer, start: number, end: number): void {
  for (let at = start; at < end; at++) out[at] = ZERO;
}

function digitCount(m: number): number {
  let count = 1;
  while (m >= 10) {
    m = (m / 10) | 0;
    count++;
  }
  return count;
}

/**
 * Writes `v` as a JSON number with at most nine significant digits at
 * out[at..]; returns where it ends. Like JSON.stringify, what is not finite
 * is written `null`. Positional for 1e-6 ≤ |v| < 1e9, else with an exponent.
 */
export function writeNumber(out: Buffer, at: number, v: number): number {
  if (!Number.isFinite(v)) return at + out.write('null', at, 'latin1');
  if (v === 0) {
    out[at] = ZERO;
    return at + 1;
  }
  if (v < 0) {
    out[at++] = MINUS;
    v = -v;
  }
  // m·10^(e-8) is v to nine significant digits, 10^8 ≤ m < 10^9. log10 can miss by one near a power
  // of ten, and rounding up can reach 10^9: both move e and take m again.
  let e = Math.floor(Math.log10(v));
  let m = Math.round(times10(v, 8 - e));
  if (m >= HIGH) m = Math.round(times10(v, 8 - ++e));
  else if (m < LOW) m = Math.round(times10(v, 8 - --e));
  if (m >= HIGH) {
    // 9.999999995·10^e and up round to 10^(e+1).
    m = LOW;
    e++;
  }
  // An int32 from here on (below 10^9): integer division and remainder stay in registers.
  m |= 0;
  let digits = SIGNIFICANT_DIGITS;
  for (let q = (m / 10) | 0; m === q * 10; q = (m / 10) | 0) {
    m = q;
    digits--;
  }
  if (e >= 0 && e < 9) {
    if (digits <= e + 1) {
      // An integer: its digits, then zeros up to the units.
      writeDigits(out, at + digits, m);
      zeros(out, at + digits, at + e + 1);
      return at + e + 1;
    }
    const point = at + e + 1;
    writeDigits(out, point, Math.floor(m / 10 ** (digits - e - 1)));
    out[point] = DOT;
    const fraction = digits - e - 1;
    writeDigits(out, point + 1 + fraction, m % 10 ** fraction);
    zeros(out, point + 1, point + 1 + fraction - digitCount(m % 10 ** fraction));
    return point + 1 + fraction;
  }
  if (e < 0 && e >= -6) {
    // 0.000ddd
    out[at] = ZERO;
    out[at + 1] = DOT;
    zeros(out, at + 2, at + 1 - e);
    writeDigits(out, at + 1 - e + digits, m);
    return at + 1 - e + digits;
  }
  // d.ddde±x
  writeDigits(out, at + 1 + digits, m);
  out[at] = out[at + 1]!;
  let end = at + 1;
  if (digits > 1) {
    out[at + 1] = DOT;
    end = at + 1 + digits;
  }
  out[end++] = LOWER_E;
  if (e < 0) out[end++] = MINUS;
  const exponent = Math.abs(e);
  const width = digitCount(exponent);
  writeDigits(out, end + width, exponent);
  return end + width;
}

/** The whole answer: the probabilities in class-index order and the inference time in seconds. */
export function scoreAnswer(result: ArrayLike<number>, time: number): Buffer {
  const head = '{"result":[';
  const tail = `],"time":${JSON.stringify(time)}}`;
  const out = Buffer.allocUnsafe(head.length + result.length * (MAX_NUMBER_BYTES + 1) + tail.length);
  let at = out.write(head, 0, 'latin1');
  for (let i = 0; i < result.length; i++) {
    if (i > 0) out[at++] = COMMA;
    at = writeNumber(out, at, result[i]!);
  }
  at += out.write(tail, at, 'latin1');
  return out.subarray(0, at);
}
