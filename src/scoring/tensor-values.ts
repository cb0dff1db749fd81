/**
 * The nested arrays of a fixed-shape tensor, `[[[[0,17,255,…],…],…]]`, read
 * straight into a Float32Array. The reader is resumable: it can be fed the
 * bytes as they arrive, piece by piece, and stops before a number token that
 * a piece cuts in two (the caller hands those few bytes back with the next
 * piece). Each stored value is JSON.parse's number rounded to float32, bit
 * for bit.
 *
 * Where the time goes: 150,528 numbers per request, mostly pixel integers
 * 0..255. Runs of those are read by readPixelRun, a loop that takes a token
 * and its comma in one 4-byte read and checks only what such a token needs.
 * The other numbers of a row (its last one, before `]`) go through a fast path
 * with no function call, no string and no bounds bookkeeping per number: while
 * a token starts at least FAST_TOKEN_BYTES before the end of the bytes at
 * hand, its few bytes cannot run past them. Everything unusual (whitespace
 * runs, exponents, long mantissas, errors) goes through the careful path,
 * which checks every byte.
 */
import { invalidBody } from './errors.ts';

// JSON's bytes, as both readers compare them (tensor-body.ts imports them from here). Defined in the
// module that reads the numbers: bindings imported from another module cost a check at every use.
export const TAB = 9;
export const LF = 10;
export const CR = 13;
export const SPACE = 32;
export const QUOTE = 34;
const PLUS = 43;
export const COMMA = 44;
export const MINUS = 45;
const DOT = 46;
export const SLASH = 47;
export const ZERO = 48;
export const NINE = 57;
export const COLON = 58;
const UPPER_E = 69;
export const LBRACKET = 91;
export const BACKSLASH = 92;
export const RBRACKET = 93;
const LOWER_E = 101;
export const LBRACE = 123;
export const RBRACE = 125;

/** Significant digits the fast path takes: below 2^53, so the mantissa is an exact integer. */
const FAST_DIGITS = 15;
/** A fast token reads at most a sign + 15 digits + point + terminator + a space after its comma. */
const FAST_TOKEN_BYTES = FAST_DIGITS + 8;

/** Every power of ten that a double holds exactly. */
const EXACT_POWERS_OF_TEN = Array.from({ length: 23 }, (_, i) => Number(`1e${i}`));
/**
 * Digits join the mantissa while it stays below this, so it stays an exact
 * integer in a double (below 2^53) and m·10^k (|k| ≤ 22) rounds once, correctly.
 */
const MANTISSA_DIGITS_LIMIT = (2 ** 53 - 9) / 10;
/** Bound on the relative error of a truncated estimate: dropped digits < 10^-15, plus one rounding. */
const ESTIMATE_ERROR = 2 ** -46;

/** Where the reader is inside the array open at `level`. */
const enum Expect {
  /** Just after `[`: an entry or `]`. */
  FirstEntry,
  /** Just after `,`: an entry. */
  Entry,
  /** Just after an entry: `,` or `]`. */
  Separator,
}

export function formatShape(shape: readonly number[]): string {
  return `[${shape.join(',')}]`;
}

export function isDigit(c: number | undefined): c is number {
  return c !== undefined && c >= ZERO && c <= NINE;
}

/** bytes[start..end) as text, one character per byte (number tokens, words in messages). */
function latin1(bytes: Uint8Array, start: number, end?: number): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1', start, end);
}

/** The first byte of what is at `at`, in words (for messages). */
function describeByte(bytes: Uint8Array, at: number): string {
  const c = bytes[at];
  return c === undefined ? 'the end of the body' : c >= SPACE && c < 127 ? `'${String.fromCharCode(c)}'` : `byte 0x${c.toString(16).padStart(2, '0')}`;
}

export function jsonSyntaxError(bytes: Uint8Array, at: number, offset: number, expected: string): never {
  throw invalidBody(`invalid JSON at byte ${offset + at}: expected ${expected}, found ${describeByte(bytes, at)}`);
}

/**
 * Whether the bytes from `at` to the end of a piece could be the start of
 * NaN or Infinity, which wrongKind names: cut off there, the word is decided
 * with the next piece, as a number cut off is, so that the message does not
 * depend on where the body was cut.
 */
function mayBeCutWord(bytes: Uint8Array, at: number): boolean {
  if (bytes.length - at > 'Infinity'.length) return false;
  const word = latin1(bytes, at);
  return 'NaN'.startsWith(word) || 'Infinity'.startsWith(word);
}

/** Reads one JSON number token anywhere (the tensor's careful path, members that are skipped). */
export class NumberToken {
  /** Where the last token read ended; -1 when it ran to the end of bytes that are not final. */
  end = 0;
  /** The last token had no fraction and no exponent. */
  integer = true;

  /**
   * One JSON number token at `start` → a double that rounds to the same
   * float32 as the double JSON.parse gives. Up to 15 significant digits with a
   * small exponent, mantissa·10^k is exact and rounds once: JSON.parse's
   * double itself. Longer mantissas (float32 values printed as 17-digit
   * doubles) keep their first 15-16 digits; that estimate is within 2^-48 of
   * the true value, so when float32 rounding is the same across that whole
   * interval it is the answer, and only the rare token near a float32 tie
   * goes through Number(). Sets `end` (-1 when the token runs to the end of
   * bytes that are not final) and `integer`.
   */
  read(bytes: Uint8Array, start: number, end: number, final: boolean, offset: number): number {
    let p = start;
    let c = bytes[p]!;
    let negative = false;
    if (c === MINUS) {
      negative = true;
      c = ++p < end ? bytes[p]! : -1;
    }
    let mantissa = 0;
    let exponent = 0;
    let truncated = false;
    let integer = true;
    if (c === ZERO) c = ++p < end ? bytes[p]! : -1;
    else if (c >= ZERO && c <= NINE) {
      do {
        if (mantissa < MANTISSA_DIGITS_LIMIT) mantissa = mantissa * 10 + (c - ZERO);
        else {
          exponent++;
          if (c !== ZERO) truncated = true;
        }
        c = ++p < end ? bytes[p]! : -1;
      } while (c >= ZERO && c <= NINE);
    } else if (p < end || final) jsonSyntaxError(bytes, p, offset, 'a digit');
    if (c === DOT) {
      integer = false;
      c = ++p < end ? bytes[p]! : -1;
      if (c >= ZERO && c <= NINE) {
        do {
          if (mantissa < MANTISSA_DIGITS_LIMIT) {
            mantissa = mantissa * 10 + (c - ZERO);
            exponent--;
          } else if (c !== ZERO) truncated = true;
          c = ++p < end ? bytes[p]! : -1;
        } while (c >= ZERO && c <= NINE);
      } else if (p < end || final) jsonSyntaxError(bytes, p, offset, 'a digit after the decimal point');
    }
    if (c === LOWER_E || c === UPPER_E) {
      integer = false;
      c = ++p < end ? bytes[p]! : -1;
      let negativeExponent = false;
      if (c === PLUS) c = ++p < end ? bytes[p]! : -1;
      else if (c === MINUS) {
        negativeExponent = true;
        c = ++p < end ? bytes[p]! : -1;
      }
      let written = 0;
      if (c >= ZERO && c <= NINE) {
        do {
          // Past 1e6 the value is 0 or Infinity either way; stop growing the integer.
          if (written < 1e6) written = written * 10 + (c - ZERO);
          c = ++p < end ? bytes[p]! : -1;
        } while (c >= ZERO && c <= NINE);
      } else if (p < end || final) jsonSyntaxError(bytes, p, offset, 'a digit in the exponent');
      exponent += negativeExponent ? -written : written;
    }
    if (p >= end && !final) {
      // The token may go on in the next piece.
      this.end = -1;
      return 0;
    }
    this.end = p;
    this.integer = integer;
    if (mantissa === 0 && !truncated) return negative ? -0 : 0;
    if (exponent >= -22 && exponent <= 22) {
      const magnitude = exponent < 0 ? mantissa / EXACT_POWERS_OF_TEN[-exponent]! : mantissa * EXACT_POWERS_OF_TEN[exponent]!;
      if (!truncated) return negative ? -magnitude : magnitude;
      const rounded = Math.fround(magnitude);
      if (Math.fround(magnitude * (1 - ESTIMATE_ERROR)) === rounded && Math.fround(magnitude * (1 + ESTIMATE_ERROR)) === rounded) {
        return negative ? -rounded : rounded;
      }
    }
    return Number(latin1(bytes, start, p));
  }
}

/**
 * Per channel c, a value v becomes v·scale[c] + offset[c] (the model's
 * normalisation: classifier.ts channelTransform). A reader given one for
 * pixels applies it to pixel integers (0..999 written without sign, fraction
 * or exponent), rounded to float32 as they are stored.
 */
export interface ChannelTransform {
  readonly scale: readonly number[];
  readonly offset: readonly number[];
}

/** The largest pixel integer + 1: what three digits hold, as a pixel run reads them. */
const FAST_INTEGER_LIMIT = 1000;

/** Where readPixelRun stopped, and the least and the greatest value it read (1000 and -1 when none). */
class PixelRun {
  end = 0;
  low = 0;
  high = 0;
}

/**
 * The fastest path, most pixels: a run of pixel tokens, each one to three
 * digits (no leading zero) and `,`, from bytes[p..] while the 4 bytes at a
 * token's start are before `end` and values[n..stop) has room. Each is stored
 * as v·scale + offset; a space before a token (`, ` as Python's json.dumps
 * writes) is skipped; anything else ends the run (most often the row's last
 * number, before `]`). Returns the new `n`; `run` gets the rest.
 *
 * A token is read as one big-endian 4-byte word, its first byte the word's
 * highest, so that Math.clz32 of the non-digit bytes' high bits is 8 × its
 * digits, and the loop checks only what a pixel token needs. A function of its
 * own with literal constants: inlined into readRow, it compiles to a tighter
 * loop than the same code written there (module constants, even copied to
 * locals, are loads that take registers). `p` must be an int32 (`p | 0`), or
 * the loop carries it as a tagged value.
 */
function readPixelRun(
  run: PixelRun,
  words: DataView,
  p: number,
  end: number,
  values: Float32Array,
  n: number,
  stop: number,
  scale: number,
  offset: number,
): number {
  const last = end - 3;
  let low = FAST_INTEGER_LIMIT;
  let high = -1;
  while (p < last && n < stop) {
    const word = words.getInt32(p);
    // Each byte XOR '0': an ASCII digit becomes 0..9; adding 0x76 to a byte of 0..0x7f then sets
    // its high bit exactly when it is 10 or more. (The carry out of a byte of 0x80 or more can
    // only mark the digit before it as a non-digit, which then fails the ',' test.)
    const digitValues = word ^ 0x30303030;
    const notDigits = ((digitValues + 0x76767676) | digitValues) & (0x80808080 | 0);
    const digitBits = Math.clz32(notDigits);
    let value = 0;
    // ',' right after the digits, and a first digit of 1..9. (With four digits, digitBits is 32,
    // which a shift takes as 0: the first digit then fails the ',' test.)
    if ((word << digitBits) >>> 24 === 0x2c && (word - 0x31000000) >>> 0 < 0x09000000) {
      // The digits right-aligned, bytes [0,d0,d1,d2]; × (256 + 10) then >>> 8 leaves 10·d1 + d2 in
      // the low half and d0 in the high half; × (65536 + 100) then >>> 16 leaves d0·100 + d1·10 + d2.
      // No product carries into its neighbour (bytes stay below 100, halves below 10000).
      const digits = digitValues >>> -digitBits;
      value = Math.imul((Math.imul(digits, 256 + 10) >>> 8) & 0x00ff00ff, 65536 + 100) >>> 16;
    } else if (word >>> 16 !== 0x302c) {
      // Not `0,` either.
      if (word >>> 24 !== 0x20) break;
      p++;
      continue;
    }
    values[n++] = value * scale + offset;
    low = Math.min(low, value);
    high = Math.max(high, value);
    p += (digitBits >> 3) + 1;
  }
  run.end = p;
  run.low = low;
  run.high = high;
  return n;
}

/**
 * A tensor member's name and shape, and what reading it needs from them,
 * worked out once: a server makes one and reads every request with it.
 */
export class TensorLayout {
  /** The shape in an array of its own: a packed array of small integers, as the readers index it per row. */
  readonly dims: readonly number[];
  readonly last: number;
  /** Values in the whole tensor. */
  readonly size: number;
  /** Values per channel ([1,C,H,W]: H·W), to find a row's channel. */
  readonly plane: number;
  /** The member's name as JSON writes it (`"data"`), to find it at the start of a body without decoding it. */
  readonly quotedMember: Buffer;

  constructor(
    readonly shape: readonly number[],
    readonly member: string,
  ) {
    this.dims = [...shape];
    this.last = shape.length - 1;
    this.size = shape.reduce((a, d) => a * d, 1);
    this.plane = shape.slice(2).reduce((a, d) => a * d, 1);
    this.quotedMember = Buffer.from(JSON.stringify(member));
  }

  /** Whether a pixel transform applies: shape [1,C,H,W], with a scale and an offset per channel. */
  takes(pixels: ChannelTransform): boolean {
    return this.shape.length === 4 && this.shape[0] === 1 && this.shape[1] === pixels.scale.length;
  }
}

export class TensorValuesReader {
  readonly values: Float32Array;
  /**
   * The values hold the model's input (the pixel transform applied), not the
   * numbers as written: true while every number is a pixel integer (0..999
   * without sign, fraction or exponent). The first other number turns the
   * values written so far back into those numbers, and the rest are stored as
   * written.
   */
  transformed: boolean;
  /** Every number was written without a fraction or an exponent (`255`, not `255.0`). */
  allIntegers = true;
  min = Infinity;
  max = -Infinity;
  /** The last `]` of the tensor has been read. */
  done = false;

  private readonly dims: readonly number[];
  private readonly last: number;
  /** Deepest open array; -1 before the tensor's first `[`. */
  private level = -1;
  /** Entries finished so far in each open array: also the index of the entry being read. */
  private readonly counts: number[];
  private expect = Expect.Entry;
  /** Values stored so far. */
  private stored = 0;
  private readonly token = new NumberToken();
  private readonly run = new PixelRun();
  /** The body offset of the bytes being read, for messages. */
  private offset = 0;
  /** Values per channel ([1,C,H,W]: H·W), to find a row's channel. */
  private readonly plane: number;

  /**
   * `pixels` applies to shapes [1,C,H,W] with a scale and offset per channel; else the numbers are stored as written.
   * `into`, when it has the shape's size, receives the values instead of a new array (a server reuses its inputs:
   * a fresh 0.6 MB array costs the kernel's zeroed pages on every request).
   */
  constructor(
    private readonly layout: TensorLayout,
    private readonly pixels?: ChannelTransform,
    into?: Float32Array,
  ) {
    this.dims = layout.dims;
    this.last = layout.last;
    this.plane = layout.plane;
    this.counts = layout.dims.map(() => 0);
    this.values = into?.length === layout.size ? into : new Float32Array(layout.size);
    this.transformed = pixels !== undefined && layout.takes(pixels);
  }

  /** Back to the numbers as written: the values so far were all pixel integers, so each is exact again. */
  private restoreWritten(n: number): void {
    const { scale, offset } = this.pixels!;
    const values = this.values;
    for (let i = 0; i < n; i++) {
      const c = Math.floor(i / this.plane);
      // `+ 0`: a pixel 0 comes back as a tiny negative, which Math.round makes -0.
      values[i] = Math.round((values[i]! - offset[c]!) / scale[c]!) + 0;
    }
    this.transformed = false;
  }

  /**
   * Reads bytes[start..end) and returns where it stopped: just after the
   * tensor's last `]`, or `end`, or (when `final` is false) the start of a
   * number token, or of what may be NaN or Infinity, that runs to `end` and
   * may go on in the next piece. With
   * `final`, the bytes are all there are, so running out is an error.
   * `offset` is the body position of bytes[0], for messages.
   */
  feed(bytes: Uint8Array, start: number, end: number, final: boolean, offset: number): number {
    this.offset = offset;
    // One view per piece, not per row: the rows' 4-byte reads go through it.
    const words = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let p = start;
    while (p < end) {
      const c = bytes[p]!;
      if (c === SPACE || c === LF || c === CR || c === TAB) {
        p++;
        continue;
      }
      const level = this.level;
      if (this.expect === Expect.Separator) {
        if (c === COMMA) this.expect = Expect.Entry;
        else if (c === RBRACKET) {
          if (this.counts[level]! !== this.dims[level]) this.tooFew(level);
          this.closeArray();
          if (this.done) return p + 1;
        } else jsonSyntaxError(bytes, p, offset, "',' or ']'");
        p++;
        continue;
      }
      if (c === RBRACKET && this.expect === Expect.FirstEntry) {
        // An empty array: too few entries (no dimension of a tensor is 0).
        if (this.dims[level] !== 0) this.tooFew(level);
        this.closeArray();
        if (this.done) return p + 1;
        p++;
        continue;
      }
      if (level >= 0 && this.counts[level] === this.dims[level]) this.tooMany(level);
      if (level < this.last) {
        if (c !== LBRACKET) {
          if (!final && mayBeCutWord(bytes, p)) return p;
          this.wrongKind(bytes, p, level + 1, this.arrayOf(level + 1));
        }
        this.level = level + 1;
        this.counts[level + 1] = 0;
        this.expect = Expect.FirstEntry;
        p++;
        continue;
      }
      p = this.readRow(bytes, words, p, end, final);
      // Out of bytes after a `,`, or (not final) before a number cut off at the end.
      if ((this.expect as Expect) !== Expect.Separator) break;
    }
    if (final && !this.done) {
      if (this.expect === Expect.Separator) jsonSyntaxError(bytes, p, offset, "',' or ']'");
      this.wrongKind(bytes, p, this.level + 1, this.level < this.last ? this.arrayOf(this.level + 1) : 'a number');
    }
    return p;
  }

  private closeArray(): void {
    this.level--;
    if (this.level < 0) this.done = true;
    else {
      this.counts[this.level]!++;
      this.expect = Expect.Separator;
    }
  }

  private arrayOf(level: number): string {
    return `an array of ${this.dims[level]} ${level === this.last ? 'numbers' : 'arrays'}`;
  }

  /**
   * Numbers of the innermost array, from an entry's first byte on, until a
   * byte other than `,` follows one (left for feed) or the bytes run out.
   */
  private readRow(bytes: Uint8Array, words: DataView, p: number, end: number, final: boolean): number {
    // Constants as locals: module-level constants would be loaded at every use.
    const space = SPACE,
      comma = COMMA,
      rbracket = RBRACKET,
      minus = MINUS,
      zero = ZERO,
      dot = DOT;
    const lf = LF,
      cr = CR,
      tab = TAB;
    const values = this.values;
    const last = this.last;
    const dim = this.dims[last]!;
    const fastEnd = end - FAST_TOKEN_BYTES;
    const run = this.run;
    let count = this.counts[last]!;
    let n = this.stored;
    // Pixel integers v are stored as v·pixelScale + pixelOffset: the row's channel's transform, or v.
    let pixelScale = 1;
    let pixelOffset = 0;
    if (this.transformed) {
      const channel = Math.floor(n / this.plane);
      pixelScale = this.pixels!.scale[channel]!;
      pixelOffset = this.pixels!.offset[channel]!;
    }
    let min = this.min;
    let max = this.max;
    let fraction = 0;
    let expect = this.expect;
    let c = 0;
    for (;;) {
      // The run stops when the row is full, so `count` needs no check in it: one more entry fails below.
      const first = n;
      n = readPixelRun(run, words, p | 0, end, values, n, n + dim - count, pixelScale, pixelOffset);
      p = run.end;
      if (n !== first) {
        count += n - first;
        if (run.low < min) min = run.low;
        if (run.high > max) max = run.high;
        expect = Expect.Entry;
      }
      if (count === dim) {
        this.counts[last] = count;
        this.tooMany(last);
      }
      // Fast path: a sign, up to 15 significant digits, an optional fraction, no
      // exponent, then ',' or ']' or whitespace: an exact integer divided by an
      // exact power of ten, rounded once, as JSON.parse rounds it.
      let value = 0;
      let integer = false;
      /** An integer 0..999 without sign, fraction or exponent: stored with the pixel transform. */
      let pixel = false;
      let read = false;
      if (p < fastEnd) {
        const start = p;
        c = bytes[p]!;
        const negative = c === minus;
        if (negative) c = bytes[++p]!;
        let digit = c - zero;
        if (digit >= 0 && digit <= 9) {
          let mantissa = digit;
          let digits = 1;
          let scale = 0;
          c = bytes[++p]!;
          if (mantissa !== 0) {
            while ((digit = c - zero) >= 0 && digit <= 9 && digits < FAST_DIGITS) {
              mantissa = mantissa * 10 + digit;
              digits++;
              c = bytes[++p]!;
            }
          }
          if (c === dot) {
            c = bytes[++p]!;
            while ((digit = c - zero) >= 0 && digit <= 9 && digits < FAST_DIGITS) {
              mantissa = mantissa * 10 + digit;
              digits++;
              scale++;
              c = bytes[++p]!;
            }
          }
          const ends = c === comma || c === rbracket || c === space || c === lf || c === cr || c === tab;
          if (ends && (scale > 0 || bytes[p - 1] !== dot)) {
            value = scale === 0 ? mantissa : mantissa / EXACT_POWERS_OF_TEN[scale]!;
            if (negative) value = -value;
            value = Math.fround(value);
            integer = scale === 0;
            pixel = integer && !negative && mantissa < FAST_INTEGER_LIMIT;
            read = true;
          }
        }
        if (!read) p = start;
      }
      if (!read) {
        // Careful path: every byte checked against the end.
        while (p < end && ((c = bytes[p]!) === space || c === lf || c === cr || c === tab)) p++;
        if (p === end) break;
        if (c !== minus && !isDigit(c)) {
          if (!final && mayBeCutWord(bytes, p)) break;
          this.counts[last] = count;
          this.wrongKind(bytes, p, last + 1, 'a number');
        }
        value = Math.fround(this.token.read(bytes, p, end, final, this.offset));
        if (this.token.end < 0) break;
        if (value - value !== 0) {
          this.counts[last] = count;
          this.outOfRange(bytes, p, last + 1);
        }
        integer = this.token.integer;
        pixel = integer && c !== minus && value < FAST_INTEGER_LIMIT;
        p = this.token.end;
      }
      if (pixel) values[n++] = value * pixelScale + pixelOffset;
      else {
        if (this.transformed) {
          this.restoreWritten(n);
          pixelScale = 1;
          pixelOffset = 0;
        }
        values[n++] = value;
      }
      if (!integer) fraction = 1;
      if (value < min) min = value;
      if (value > max) max = value;
      count++;
      while (p < end && ((c = bytes[p]!) === space || c === lf || c === cr || c === tab)) p++;
      if (p < end && c === comma) {
        p++;
        expect = Expect.Entry;
        continue;
      }
      expect = Expect.Separator;
      break;
    }
    this.expect = expect;
    this.counts[last] = count;
    this.stored = n;
    this.min = min;
    this.max = max;
    if (fraction !== 0) this.allIntegers = false;
    return p;
  }

  private path(depth: number): string {
    let out = this.layout.member;
    for (let level = 0; level < depth; level++) out += `[${this.counts[level]}]`;
    return out;
  }

  private shapeNote(): string {
    return `(shape ${formatShape(this.layout.shape)})`;
  }

  private tooMany(level: number): never {
    const dim = this.dims[level]!;
    throw invalidBody(`${this.path(level)} has more than ${dim} entries; expected ${dim} ${this.shapeNote()}`, this.path(level));
  }

  private tooFew(level: number): never {
    const dim = this.dims[level]!;
    throw invalidBody(`${this.path(level)} has ${this.counts[level]} entries; expected ${dim} ${this.shapeNote()}`, this.path(level));
  }

  private outOfRange(bytes: Uint8Array, start: number, depth: number): never {
    const token = latin1(bytes, start, Math.min(this.token.end, start + 40));
    throw invalidBody(`${this.path(depth)} is ${token}, outside the range of a 32-bit float`, this.path(depth));
  }

  /** Something other than what the shape wants at this place: name what it is. */
  private wrongKind(bytes: Uint8Array, at: number, depth: number, expected: string): never {
    const c = bytes[at];
    const kinds: Record<number, string> = { [LBRACKET]: 'an array', [LBRACE]: 'an object', [QUOTE]: 'a string', 116: 'true', 102: 'false', 110: 'null' };
    let found = c === undefined ? undefined : kinds[c];
    if (found === undefined && (c === MINUS || isDigit(c))) found = 'a number';
    if (found === undefined) {
      const word = /^[A-Za-z]+/.exec(latin1(bytes, at, at + 16))?.[0];
      if (word === 'NaN' || word === 'Infinity') found = `${word}, which JSON does not have (values must be finite numbers)`;
    }
    if (found === undefined) jsonSyntaxError(bytes, at, this.offset, expected);
    const path = this.path(depth);
    throw invalidBody(`${path} is ${found}; expected ${expected} ${this.shapeNote()}`, path);
  }
}
