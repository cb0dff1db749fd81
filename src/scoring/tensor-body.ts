/**
 * Reads a scoring request body, `{"data": [[[[…]]]]}` with 150,528 numbers
 * (§2.1), straight into a Float32Array in one pass over the bytes. This is
 * where a request's time goes: JSON.parse would build 150,528 JS numbers in
 * 672 nested arrays only for us to copy them out again. The reader accepts
 * exactly the JSON that JSON.parse accepts (checked against it on fuzzed
 * bodies in the tests), and each stored value is JSON.parse's number rounded
 * to float32, bit for bit.
 */
import { invalidBody } from './errors.ts';

/** [batch, channels, height, width] (§2.1, §8). */
export const INPUT_SHAPE: readonly number[] = [1, 3, 224, 224];

/** Nesting allowed inside members other than "data" (their values are checked, then ignored). */
export const MAX_NESTING = 64;

export interface TensorBody {
  values: Float32Array;
  /** Every number was written without a fraction or an exponent (`255`, not `255.0`). */
  allIntegers: boolean;
  min: number;
  max: number;
}

const TAB = 9;
const LF = 10;
const CR = 13;
const SPACE = 32;
const QUOTE = 34;
const PLUS = 43;
const COMMA = 44;
const MINUS = 45;
const DOT = 46;
const SLASH = 47;
const ZERO = 48;
const NINE = 57;
const COLON = 58;
const UPPER_E = 69;
const LBRACKET = 91;
const BACKSLASH = 92;
const RBRACKET = 93;
const LOWER_E = 101;
const LBRACE = 123;
const RBRACE = 125;

/** Every power of ten that a double holds exactly. */
const EXACT_POWERS_OF_TEN = Array.from({ length: 23 }, (_, i) => Number(`1e${i}`));
/**
 * Digits join the mantissa while it stays below this, so it stays an exact
 * integer in a double (below 2^53) and m·10^k (|k| ≤ 22) rounds once, correctly.
 */
const MANTISSA_DIGITS_LIMIT = (2 ** 53 - 9) / 10;
/** Bound on the relative error of a truncated estimate: dropped digits < 10^-15, plus one rounding. */
const ESTIMATE_ERROR = 2 ** -46;
const ESCAPABLE = new Set([QUOTE, BACKSLASH, SLASH, 98, 102, 110, 114, 116]); // " \ / b f n r t
const LITERALS: Record<number, string> = { 116: 'true', 102: 'false', 110: 'null' };

function isDigit(c: number | undefined): c is number {
  return c !== undefined && c >= ZERO && c <= NINE;
}

function isHexDigit(c: number | undefined): boolean {
  return c !== undefined && ((c >= ZERO && c <= NINE) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102));
}

export function formatShape(shape: readonly number[]): string {
  return `[${shape.join(',')}]`;
}

/** Parses a whole body; throws ScoringError 400 naming what is wrong and where. */
export function readTensorBody(body: Uint8Array, shape: readonly number[] = INPUT_SHAPE, member = 'data'): TensorBody {
  return new TensorBodyReader(body, shape, member).readDocument();
}

class TensorBodyReader {
  private pos = 0;
  private readonly text: Buffer;
  private readonly strides: number[];
  private values: Float32Array | null = null;
  private allIntegers = true;
  private min = Infinity;
  private max = -Infinity;
  /** Set by readNumber: the token had no fraction and no exponent. */
  private integerToken = true;
  private readonly index: number[];

  constructor(
    private readonly bytes: Uint8Array,
    private readonly shape: readonly number[],
    private readonly member: string,
  ) {
    this.text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.strides = shape.map((_, level) => shape.slice(level + 1).reduce((a, d) => a * d, 1));
    this.index = shape.map(() => 0);
  }

  readDocument(): TensorBody {
    const wanted = `{"${this.member}": …} of shape ${formatShape(this.shape)}`;
    this.skipWhitespace();
    if (this.pos >= this.bytes.length) throw invalidBody(`the body is empty; expected a JSON object ${wanted}`);
    if (this.bytes[this.pos] !== LBRACE) {
      this.skipValue();
      throw invalidBody(`the body must be a JSON object ${wanted}`);
    }
    this.pos++;
    this.skipWhitespace();
    if (this.bytes[this.pos] === RBRACE) this.pos++;
    else this.readMembers();
    this.skipWhitespace();
    if (this.pos < this.bytes.length) this.syntaxError('the end of the body');
    if (!this.values) throw invalidBody(`the body has no "${this.member}" member; expected ${wanted}`);
    return { values: this.values, allIntegers: this.allIntegers, min: this.min, max: this.max };
  }

  private readMembers(): void {
    for (;;) {
      this.skipWhitespace();
      const isTensor = this.readMemberName();
      if (isTensor) {
        // JSON.parse would keep the last of two; two tensors in one request is a client bug worth naming.
        if (this.values) throw invalidBody(`"${this.member}" appears twice`, this.member);
        this.values = new Float32Array(this.strides[0]! * this.shape[0]!);
        this.readArray(0, 0);
      } else {
        this.skipValue();
      }
      this.skipWhitespace();
      const c = this.bytes[this.pos];
      if (c === COMMA) this.pos++;
      else if (c === RBRACE) {
        this.pos++;
        return;
      } else this.syntaxError("',' or '}'");
    }
  }

  /** Reads `"name"` and the colon after it; true when the name is the tensor member. */
  private readMemberName(): boolean {
    if (this.bytes[this.pos] !== QUOTE) this.syntaxError('a member name in double quotes');
    const start = this.pos;
    const escaped = this.skipString();
    const end = this.pos;
    this.skipWhitespace();
    if (this.bytes[this.pos] !== COLON) this.syntaxError("':'");
    this.pos++;
    this.skipWhitespace();
    const name = escaped ? (JSON.parse(this.text.toString('utf8', start, end)) as string) : this.text.toString('utf8', start + 1, end - 1);
    return name === this.member;
  }

  private path(depth: number): string {
    let out = this.member;
    for (let level = 0; level < depth; level++) out += `[${this.index[level]}]`;
    return out;
  }

  private shapeNote(): string {
    return `(shape ${formatShape(this.shape)})`;
  }

  /** One level of the nested tensor: `[` dim entries `]`, each an array or, at the last level, a number. */
  private readArray(level: number, offset: number): void {
    const dim = this.shape[level]!;
    const last = level === this.shape.length - 1;
    if (this.bytes[this.pos] !== LBRACKET) this.wrongKind(level, `an array of ${dim} ${last ? 'numbers' : 'arrays'}`);
    this.pos++;
    this.skipWhitespace();
    if (last) return this.readRow(level, offset);
    let count = 0;
    if (this.bytes[this.pos] === RBRACKET) this.pos++;
    else {
      for (;;) {
        if (count === dim) this.tooMany(level);
        this.index[level] = count;
        this.readArray(level + 1, offset + count * this.strides[level]!);
        count++;
        this.skipWhitespace();
        const c = this.bytes[this.pos];
        if (c === COMMA) {
          this.pos++;
          this.skipWhitespace();
        } else if (c === RBRACKET) {
          this.pos++;
          break;
        } else this.syntaxError("',' or ']'");
      }
    }
    if (count !== dim) this.tooFew(level, count);
  }

  /**
   * The innermost level, where 224 numbers per row are read: the hot loop.
   * Reads past the last byte give undefined, which equals no character and
   * fails every range test, so the end of the body needs no check of its own.
   */
  private readRow(level: number, offset: number): void {
    const dim = this.shape[level]!;
    const bytes = this.bytes;
    const values = this.values!;
    let min = this.min;
    let max = this.max;
    let allIntegers = this.allIntegers;
    let count = 0;
    let p = this.pos;
    if (bytes[p] === RBRACKET) p++;
    else {
      for (;;) {
        if (count === dim) this.tooMany(level);
        const start = p;
        let c = bytes[p]!;
        // Fast path: up to 15 significant digits and no exponent (pixels 0..255,
        // `0.4862`): an exact integer divided by an exact power of ten, rounded once.
        const negative = c === MINUS;
        if (negative) c = bytes[++p]!;
        const leadingZero = c === ZERO;
        let mantissa = 0;
        let digits = 0;
        let scale = 0;
        while (c >= ZERO && c <= NINE && digits < 15) {
          mantissa = mantissa * 10 + (c - ZERO);
          digits++;
          c = bytes[++p]!;
        }
        const fraction = c === DOT && digits > 0;
        if (fraction) {
          c = bytes[++p]!;
          while (c >= ZERO && c <= NINE && digits < 15) {
            mantissa = mantissa * 10 + (c - ZERO);
            digits++;
            scale++;
            c = bytes[++p]!;
          }
        }
        let value: number;
        const plain =
          (c === COMMA || c === RBRACKET || c === SPACE || c === LF || c === CR || c === TAB) &&
          digits > 0 &&
          !(leadingZero && digits - scale > 1) &&
          !(fraction && scale === 0);
        if (plain) {
          value = scale === 0 ? mantissa : mantissa / EXACT_POWERS_OF_TEN[scale]!;
          if (negative) value = -value;
          values[offset + count] = value;
          // Integers below 2^24 are exact in float32; anything else is compared as stored.
          if (scale !== 0) {
            allIntegers = false;
            value = values[offset + count]!;
          } else if (mantissa > 16777216) value = values[offset + count]!;
        } else {
          this.pos = start;
          if (digits === 0 && !negative) {
            this.index[level] = count;
            this.wrongKind(level + 1, 'a number');
          }
          values[offset + count] = this.readNumber();
          value = values[offset + count]!;
          if (value - value !== 0) {
            this.index[level] = count;
            this.outOfRange(level + 1, start);
          }
          p = this.pos;
          c = bytes[p]!;
          allIntegers &&= this.integerToken;
        }
        if (value < min) min = value;
        if (value > max) max = value;
        count++;
        while (c === SPACE || c === LF || c === CR || c === TAB) c = bytes[++p]!;
        if (c === COMMA) {
          c = bytes[++p]!;
          while (c === SPACE || c === LF || c === CR || c === TAB) c = bytes[++p]!;
        } else if (c === RBRACKET) {
          p++;
          break;
        } else {
          this.pos = p;
          this.syntaxError("',' or ']'");
        }
      }
    }
    this.pos = p;
    this.min = min;
    this.max = max;
    this.allIntegers = allIntegers;
    if (count !== dim) this.tooFew(level, count);
  }

  private tooMany(level: number): never {
    const dim = this.shape[level]!;
    throw invalidBody(`${this.path(level)} has more than ${dim} entries; expected ${dim} ${this.shapeNote()}`, this.path(level));
  }

  private tooFew(level: number, count: number): never {
    const dim = this.shape[level]!;
    throw invalidBody(`${this.path(level)} has ${count} entries; expected ${dim} ${this.shapeNote()}`, this.path(level));
  }

  private outOfRange(depth: number, start: number): never {
    const token = this.text.toString('latin1', start, Math.min(this.pos, start + 40));
    throw invalidBody(`${this.path(depth)} is ${token}, outside the range of a 32-bit float`, this.path(depth));
  }

  /**
   * One JSON number token → a double that rounds to the same float32 as the
   * double JSON.parse gives. Up to 15 significant digits with a small
   * exponent, mantissa·10^k is exact and rounds once: JSON.parse's double
   * itself. Longer mantissas (float32 values printed as 17-digit doubles)
   * keep their first 15-16 digits; that estimate is within 2^-48 of the true
   * value, so when float32 rounding is the same across that whole interval
   * it is the answer, and only the rare token near a float32 tie goes
   * through Number().
   */
  private readNumber(): number {
    const bytes = this.bytes;
    const end = bytes.length;
    const start = this.pos;
    let p = start;
    let c = p < end ? bytes[p]! : -1;
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
    } else this.syntaxError('a digit', p);
    if (c === DOT) {
      integer = false;
      c = ++p < end ? bytes[p]! : -1;
      if (!(c >= ZERO && c <= NINE)) this.syntaxError('a digit after the decimal point', p);
      do {
        if (mantissa < MANTISSA_DIGITS_LIMIT) {
          mantissa = mantissa * 10 + (c - ZERO);
          exponent--;
        } else if (c !== ZERO) truncated = true;
        c = ++p < end ? bytes[p]! : -1;
      } while (c >= ZERO && c <= NINE);
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
      if (!(c >= ZERO && c <= NINE)) this.syntaxError('a digit in the exponent', p);
      let written = 0;
      do {
        // Past 1e6 the value is 0 or Infinity either way; stop growing the integer.
        if (written < 1e6) written = written * 10 + (c - ZERO);
        c = ++p < end ? bytes[p]! : -1;
      } while (c >= ZERO && c <= NINE);
      exponent += negativeExponent ? -written : written;
    }
    this.pos = p;
    this.integerToken = integer;
    if (mantissa === 0 && !truncated) return negative ? -0 : 0;
    if (exponent >= -22 && exponent <= 22) {
      const magnitude = exponent < 0 ? mantissa / EXACT_POWERS_OF_TEN[-exponent]! : mantissa * EXACT_POWERS_OF_TEN[exponent]!;
      if (!truncated) return negative ? -magnitude : magnitude;
      const rounded = Math.fround(magnitude);
      if (Math.fround(magnitude * (1 - ESTIMATE_ERROR)) === rounded && Math.fround(magnitude * (1 + ESTIMATE_ERROR)) === rounded) {
        return negative ? -rounded : rounded;
      }
    }
    return Number(this.text.toString('latin1', start, p));
  }

  /** Skips a string token; returns whether it held escapes. */
  private skipString(): boolean {
    const bytes = this.bytes;
    let p = this.pos + 1;
    let escaped = false;
    for (;;) {
      const c = bytes[p];
      if (c === undefined) this.syntaxError('the end of the string', p);
      if (c === QUOTE) break;
      if (c < SPACE) this.syntaxError('no control character inside a string', p);
      if (c === BACKSLASH) {
        escaped = true;
        const next = bytes[++p];
        if (next === 117) {
          for (let k = 1; k <= 4; k++) if (!isHexDigit(bytes[p + k])) this.syntaxError('four hex digits after \\u', p + k);
          p += 4;
        } else if (next === undefined || !ESCAPABLE.has(next)) this.syntaxError('a valid escape after \\', p);
      }
      p++;
    }
    this.pos = p + 1;
    return escaped;
  }

  /** Checks and skips any JSON value (members we do not use), without recursion. */
  private skipValue(): void {
    const closers: number[] = [];
    for (;;) {
      this.skipWhitespace();
      const c = this.bytes[this.pos];
      if (c === LBRACE || c === LBRACKET) {
        if (closers.length >= MAX_NESTING) throw invalidBody(`the body nests deeper than ${MAX_NESTING} levels at byte ${this.pos}`);
        const closer = c === LBRACE ? RBRACE : RBRACKET;
        this.pos++;
        this.skipWhitespace();
        if (this.bytes[this.pos] !== closer) {
          closers.push(closer);
          if (closer === RBRACE) this.readMemberName();
          continue;
        }
        this.pos++;
      } else if (c === QUOTE) this.skipString();
      else if (c === MINUS || isDigit(c)) this.readNumber();
      else this.skipLiteral();
      // After a value: close what ends here, or move to the next entry.
      for (;;) {
        const closer = closers[closers.length - 1];
        if (closer === undefined) return;
        this.skipWhitespace();
        const d = this.bytes[this.pos];
        if (d === closer) {
          this.pos++;
          closers.pop();
          continue;
        }
        if (d !== COMMA) this.syntaxError(closer === RBRACE ? "',' or '}'" : "',' or ']'");
        this.pos++;
        if (closer === RBRACE) {
          this.skipWhitespace();
          this.readMemberName();
        }
        break;
      }
    }
  }

  private skipLiteral(): void {
    const literal = LITERALS[this.bytes[this.pos] ?? -1];
    if (!literal || this.text.toString('latin1', this.pos, this.pos + literal.length) !== literal) this.syntaxError('a JSON value');
    this.pos += literal.length;
  }

  private skipWhitespace(): void {
    const bytes = this.bytes;
    let p = this.pos;
    let c = bytes[p];
    while (c === SPACE || c === LF || c === CR || c === TAB) c = bytes[++p];
    this.pos = p;
  }

  /** Something other than what the shape wants at this place: name what it is. */
  private wrongKind(depth: number, expected: string): never {
    const c = this.bytes[this.pos];
    const kinds: Record<number, string> = { [LBRACKET]: 'an array', [LBRACE]: 'an object', [QUOTE]: 'a string', 116: 'true', 102: 'false', 110: 'null' };
    let found = c === undefined ? undefined : kinds[c];
    if (found === undefined && (c === MINUS || isDigit(c))) found = 'a number';
    if (found === undefined) {
      const word = /^[A-Za-z]+/.exec(this.text.toString('latin1', this.pos, this.pos + 16))?.[0];
      if (word === 'NaN' || word === 'Infinity') found = `${word}, which JSON does not have (values must be finite numbers)`;
    }
    if (found === undefined) this.syntaxError(expected);
    const path = this.path(depth);
    throw invalidBody(`${path} is ${found}; expected ${expected} ${this.shapeNote()}`, path);
  }

  private syntaxError(expected: string, at = this.pos): never {
    const c = this.bytes[at];
    const found = c === undefined ? 'the end of the body' : c >= SPACE && c < 127 ? `'${String.fromCharCode(c)}'` : `byte 0x${c.toString(16).padStart(2, '0')}`;
    throw invalidBody(`invalid JSON at byte ${at}: expected ${expected}, found ${found}`);
  }
}
