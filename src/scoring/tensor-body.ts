/**
 * Reads a scoring request body, `{"data": [[[[…]]]]}` with 150,528 numbers
 * (§2.1), straight into a Float32Array. This is where a request's time goes:
 * JSON.parse would build 150,528 JS numbers in 672 nested arrays only for us
 * to copy them out again. The reader accepts exactly the JSON that JSON.parse
 * accepts (checked against it on fuzzed bodies in the tests), and each stored
 * value is JSON.parse's number rounded to float32, bit for bit.
 *
 * Two ways in: readTensorBody(bytes) for a whole body, and TensorBodyStream,
 * fed the body's chunks as they arrive, so that reading the numbers overlaps
 * receiving them and no whole-body buffer is parsed afterwards.
 */
import { invalidBody } from './errors.ts';
import {
  BACKSLASH,
  COLON,
  COMMA,
  CR,
  formatShape,
  isDigit,
  jsonSyntaxError,
  LBRACE,
  LBRACKET,
  LF,
  MINUS,
  NINE,
  NumberToken,
  QUOTE,
  RBRACE,
  RBRACKET,
  SLASH,
  SPACE,
  TAB,
  TensorValuesReader,
  ZERO,
  type PixelTransform,
} from './tensor-values.ts';

export { formatShape, pixelTransform, type PixelTransform } from './tensor-values.ts';

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
  /** `values` already hold the model's input: every number was a pixel integer, and the PixelTransform given was applied. */
  pixelsApplied: boolean;
}


const ESCAPABLE = new Set([QUOTE, BACKSLASH, SLASH, 98, 102, 110, 114, 116]); // " \ / b f n r t
const LITERALS: Record<number, string> = { 116: 'true', 102: 'false', 110: 'null' };

function isHexDigit(c: number | undefined): boolean {
  return c !== undefined && ((c >= ZERO && c <= NINE) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102));
}

function isWhitespace(c: number): boolean {
  return c === SPACE || c === LF || c === CR || c === TAB;
}

function tensorBodyOf(tensor: TensorValuesReader): TensorBody {
  return { values: tensor.values, allIntegers: tensor.allIntegers, min: tensor.min, max: tensor.max, pixelsApplied: tensor.transformed };
}

/**
 * Parses a whole body; throws ScoringError 400 naming what is wrong and where.
 * With `pixels`, a body of pixel integers comes back with the transform
 * applied (`pixelsApplied`), saving a pass over the values.
 */
export function readTensorBody(body: Uint8Array, shape: readonly number[] = INPUT_SHAPE, member = 'data', pixels?: PixelTransform): TensorBody {
  return new TensorBodyReader(body, shape, member, pixels).readDocument();
}

/** Largest number of bytes a stream holds back between chunks before it gives up reading early. */
const MAX_CARRY = 4096;
/** Bytes of the next chunk joined to a number cut off at the end of a chunk (a number token rarely needs more). */
const JOIN_BYTES = 64;

/**
 * A body read chunk by chunk. The common body, `{"data": [[[[…]]]]}` (any
 * whitespace), is read as it arrives: the tensor's numbers go into the
 * Float32Array chunk by chunk, and a number cut in two by a chunk boundary is
 * carried over to the next chunk. Anything else (other members, escapes in
 * the name, an error) is left to readTensorBody on the whole body at the end,
 * so results and error messages are exactly those of readTensorBody.
 */
export class TensorBodyStream {
  private readonly chunks: Buffer[] = [];
  private received = 0;
  private phase: 'start' | 'tensor' | 'end' | 'whole' = 'start';
  /** Bytes of the last chunk not read yet: the start of the body, or a number cut off. */
  private carry: Buffer | null = null;
  private closed = false;
  private readonly tensor: TensorValuesReader;
  /** `"data"` as bytes, to recognise the member name without decoding it. */
  private readonly name: Buffer;

  /** `into`: where the values go when the body is read as it arrives (see TensorValuesReader). */
  constructor(
    private readonly shape: readonly number[] = INPUT_SHAPE,
    private readonly member = 'data',
    private readonly pixels?: PixelTransform,
    into?: Float32Array,
  ) {
    this.tensor = new TensorValuesReader(shape, member, pixels, into);
    this.name = Buffer.from(JSON.stringify(member));
  }

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    const offset = this.received;
    this.received += chunk.length;
    if (this.phase === 'whole') return;
    try {
      const carry = this.carry;
      this.carry = null;
      if (!carry) this.read(chunk, offset, 0);
      else if (this.phase === 'tensor') {
        // Finish the cut number with the chunk's first bytes, then go on in the chunk itself:
        // copying every chunk behind a carry would cost more than reading it.
        const head = Buffer.concat([carry, chunk.subarray(0, JOIN_BYTES)]);
        const p = this.tensor.feed(head, 0, head.length, false, offset - carry.length);
        if (p >= carry.length || this.tensor.done) this.read(chunk, offset, p - carry.length);
        else this.read(Buffer.concat([carry, chunk]), offset - carry.length, 0);
      } else this.read(Buffer.concat([carry, chunk]), offset - carry.length, 0);
    } catch {
      // readTensorBody names the error at the end.
      this.phase = 'whole';
    }
  }

  /** Whether the body was read as it arrived (else end() reads the whole body). */
  get readAsItArrived(): boolean {
    return this.phase === 'end' && this.closed && !this.carry;
  }

  /** The tensor, once the whole body has been pushed; throws ScoringError 400 like readTensorBody. */
  end(): TensorBody {
    if (this.readAsItArrived) return tensorBodyOf(this.tensor);
    return readTensorBody(Buffer.concat(this.chunks, this.received), this.shape, this.member, this.pixels);
  }

  /** Reads bytes[from..]; bytes[0] is at `offset` in the body. */
  private read(bytes: Buffer, offset: number, from: number): void {
    let p = from;
    if (this.phase === 'start') {
      p = this.readStart(bytes);
      if (p === -1 && bytes.length <= MAX_CARRY) this.carry = Buffer.from(bytes);
      else if (p < 0) this.phase = 'whole';
      if (p < 0) return;
      this.phase = 'tensor';
    }
    if (this.phase === 'tensor') {
      // (The tensor may have ended in the bytes joined to a carry already.)
      if (!this.tensor.done) p = this.tensor.feed(bytes, p, bytes.length, false, offset);
      if (!this.tensor.done) {
        // A long token cut off (a thousand-digit number) is read at the end instead.
        if (p + MAX_CARRY < bytes.length) this.phase = 'whole';
        else if (p < bytes.length) this.carry = Buffer.from(bytes.subarray(p));
        return;
      }
      this.phase = 'end';
    }
    // After the tensor: only `}` and whitespace; other members go to readTensorBody.
    for (; p < bytes.length; p++) {
      const c = bytes[p]!;
      if (isWhitespace(c)) continue;
      if (c !== RBRACE || this.closed) {
        this.phase = 'whole';
        return;
      }
      this.closed = true;
    }
  }

  /** `{ "data" :` at the start: the position after the colon; -1 when more bytes are needed, -2 for any other start. */
  private readStart(bytes: Buffer): number {
    let p = 0;
    const skip = (): void => {
      while (p < bytes.length && isWhitespace(bytes[p]!)) p++;
    };
    skip();
    if (p === bytes.length) return -1;
    if (bytes[p++] !== LBRACE) return -2;
    skip();
    const name = this.name;
    for (let k = 0; k < name.length; k++, p++) {
      if (p === bytes.length) return -1;
      if (bytes[p] !== name[k]) return -2;
    }
    skip();
    if (p === bytes.length) return -1;
    return bytes[p] === COLON ? p + 1 : -2;
  }
}

class TensorBodyReader {
  private pos = 0;
  private readonly text: Buffer;
  private tensor: TensorValuesReader | null = null;
  private readonly token = new NumberToken();

  constructor(
    private readonly bytes: Uint8Array,
    private readonly shape: readonly number[],
    private readonly member: string,
    private readonly pixels: PixelTransform | undefined,
  ) {
    this.text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
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
    if (!this.tensor) throw invalidBody(`the body has no "${this.member}" member; expected ${wanted}`);
    return tensorBodyOf(this.tensor);
  }

  private readMembers(): void {
    for (;;) {
      this.skipWhitespace();
      const isTensor = this.readMemberName();
      if (isTensor) {
        // JSON.parse would keep the last of two; two tensors in one request is a client bug worth naming.
        if (this.tensor) throw invalidBody(`"${this.member}" appears twice`, this.member);
        this.tensor = new TensorValuesReader(this.shape, this.member, this.pixels);
        this.pos = this.tensor.feed(this.bytes, this.pos, this.bytes.length, true, 0);
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

  /** Checks a number token of a member we do not use; returns where it ends. */
  private skipNumber(): number {
    this.token.read(this.bytes, this.pos, this.bytes.length, true, 0);
    return this.token.end;
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
      else if (c === MINUS || isDigit(c)) this.pos = this.skipNumber();
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
    while (c !== undefined && isWhitespace(c)) c = bytes[++p];
    this.pos = p;
  }

  private syntaxError(expected: string, at = this.pos): never {
    jsonSyntaxError(this.bytes, at, 0, expected);
  }
}
