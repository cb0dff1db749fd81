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
 * receiving them. Either way each byte of a body is read once.
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
  TensorLayout,
  TensorValuesReader,
  ZERO,
  type ChannelTransform,
} from './tensor-values.ts';

export { formatShape, TensorLayout, type ChannelTransform } from './tensor-values.ts';

/** [batch, channels, height, width] (§2.1, §8). */
export const INPUT_SHAPE: readonly number[] = [1, 3, 224, 224];

/** A request's tensor, `"data"` of INPUT_SHAPE, laid out once for every request. */
export const INPUT_LAYOUT = new TensorLayout(INPUT_SHAPE, 'data');

/** Nesting allowed inside members other than "data" (their values are checked, then ignored). */
export const MAX_NESTING = 64;

export interface TensorBody {
  values: Float32Array;
  /** Every number was written without a fraction or an exponent (`255`, not `255.0`). */
  allIntegers: boolean;
  min: number;
  max: number;
  /** `values` already hold the model's input: every number was a pixel integer, and the pixel transform given was applied. */
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
export function readTensorBody(body: Uint8Array, layout: TensorLayout = INPUT_LAYOUT, pixels?: ChannelTransform): TensorBody {
  return new TensorBodyReader(body, 0, layout, pixels).readDocument();
}

/** Largest number of bytes a stream holds back between chunks before it stops reading as the body arrives. */
const MAX_CARRY = 4096;
/** Bytes of the next chunk joined to a number cut off at the end of a chunk (a number token rarely needs more). */
const JOIN_BYTES = 64;
const EMPTY = Buffer.alloc(0);

/**
 * A body read chunk by chunk. The common body, `{"data": [[[[…]]]]}` (any
 * whitespace), is read as it arrives: the tensor's numbers go into the
 * Float32Array chunk by chunk, and a number cut in two by a chunk boundary is
 * carried over to the next chunk. An error is kept and thrown by end(): it is
 * the one readTensorBody gives, wherever the chunks were cut. Where the
 * stream stops reading as the body arrives (members before the tensor or
 * after it, an escaped name, a token longer than MAX_CARRY), it keeps the
 * bytes from there on, and end() reads only those, with the tensor reader as
 * the stream left it: no byte is read twice.
 */
export class TensorBodyStream {
  private received = 0;
  /** `rest`: the stream has stopped reading as the body arrives; `failed`: the body was refused. */
  private phase: 'start' | 'tensor' | 'after' | 'rest' | 'failed' = 'start';
  /** Bytes of the last chunk not read yet: the start of the body, or a number cut off. */
  private carry: Buffer | null = null;
  /** The `}` after the tensor has been read. */
  private closed = false;
  /** The tensor's last `]` was read as the body arrived. */
  private tensorRead = false;
  /** In phase `rest`: the body from `restOffset` on, read by end() from the body's start or where the tensor reader stopped. */
  private readonly rest: Buffer[] = [];
  private restOffset = 0;
  private restFrom: 'document' | 'tensor' = 'document';
  /** In phase `failed`: what end() throws. */
  private failure: unknown;
  private readonly tensor: TensorValuesReader;

  /**
   * `layout`: the tensor's member and shape, made once per server (INPUT_LAYOUT).
   * `into`: where the values go (see TensorValuesReader).
   */
  constructor(
    private readonly layout: TensorLayout = INPUT_LAYOUT,
    private readonly pixels?: ChannelTransform,
    private readonly into?: Float32Array,
  ) {
    this.tensor = new TensorValuesReader(layout, pixels, into);
  }

  push(chunk: Buffer): void {
    const offset = this.received;
    this.received += chunk.length;
    if (this.phase === 'rest') {
      this.rest.push(chunk);
      return;
    }
    if (this.phase === 'failed') return;
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
    } catch (error) {
      this.phase = 'failed';
      this.failure = error;
    }
  }

  /** Whether the tensor was read as the body arrived (end() then reads at most the members after it). */
  get readAsItArrived(): boolean {
    return this.tensorRead;
  }

  /** The tensor, once the whole body has been pushed; throws ScoringError 400 like readTensorBody. */
  end(): TensorBody {
    if (this.phase === 'failed') throw this.failure;
    if (this.phase === 'after' && this.closed) return tensorBodyOf(this.tensor);
    if (this.phase !== 'rest') {
      // The body ended before the stream had read it all: what is left is a carry, or nothing.
      const carry = this.carry ?? EMPTY;
      this.stop(carry, 0, this.received - carry.length, this.phase === 'start' ? 'document' : 'tensor');
    }
    const bytes = this.rest.length === 1 ? this.rest[0]! : Buffer.concat(this.rest);
    const reader = new TensorBodyReader(bytes, this.restOffset, this.layout, this.pixels, this.into);
    return this.restFrom === 'document' ? reader.readDocument() : reader.readAfter(this.tensor);
  }

  /** Reads bytes[from..]; bytes[0] is at `offset` in the body. */
  private read(bytes: Buffer, offset: number, from: number): void {
    let p = from;
    if (this.phase === 'start') {
      p = this.readStart(bytes);
      if (p === -1 && bytes.length <= MAX_CARRY) this.carry = Buffer.from(bytes);
      else if (p < 0) this.stop(bytes, 0, offset, 'document');
      if (p < 0) return;
      this.phase = 'tensor';
    }
    if (this.phase === 'tensor') {
      // (The tensor may have ended in the bytes joined to a carry already.)
      if (!this.tensor.done) p = this.tensor.feed(bytes, p, bytes.length, false, offset);
      if (!this.tensor.done) {
        // A long token cut off (a thousand-digit number) is read at the end instead.
        if (p + MAX_CARRY < bytes.length) this.stop(bytes, p, offset, 'tensor');
        else if (p < bytes.length) this.carry = Buffer.from(bytes.subarray(p));
        return;
      }
      this.phase = 'after';
      this.tensorRead = true;
    }
    // After the tensor: `}` and whitespace; other members are read at the end.
    for (; p < bytes.length; p++) {
      const c = bytes[p]!;
      if (isWhitespace(c)) continue;
      if (this.closed) jsonSyntaxError(bytes, p, offset, 'the end of the body');
      if (c !== RBRACE) return this.stop(bytes, p, offset, 'tensor');
      this.closed = true;
    }
  }

  /** Stops reading as the body arrives: end() reads the body from bytes[p] (at `offset + p`) on, from its start or after the tensor reader. */
  private stop(bytes: Buffer, p: number, offset: number, from: 'document' | 'tensor'): void {
    this.phase = 'rest';
    this.rest.push(bytes.subarray(p));
    this.restOffset = offset + p;
    this.restFrom = from;
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
    const name = this.layout.quotedMember;
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
    /** Where bytes[0] is in the body: past 0 for the rest of a body that a stream stopped reading. */
    private readonly offset: number,
    private readonly layout: TensorLayout,
    private readonly pixels: ChannelTransform | undefined,
    private readonly into?: Float32Array,
  ) {
    this.text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  readDocument(): TensorBody {
    this.skipWhitespace();
    if (this.pos >= this.bytes.length) throw invalidBody(`the body is empty; expected a JSON object ${this.wanted()}`);
    if (this.bytes[this.pos] !== LBRACE) {
      this.skipValue();
      throw invalidBody(`the body must be a JSON object ${this.wanted()}`);
    }
    this.pos++;
    this.skipWhitespace();
    if (this.bytes[this.pos] === RBRACE) this.pos++;
    else {
      do this.readMember();
      while (this.nextMember());
    }
    return this.finish();
  }

  /** The rest of a body after a stream's tensor reader: inside the tensor (at a long token) or after it. */
  readAfter(tensor: TensorValuesReader): TensorBody {
    this.tensor = tensor;
    if (!tensor.done) this.pos = tensor.feed(this.bytes, 0, this.bytes.length, true, this.offset);
    while (this.nextMember()) this.readMember();
    return this.finish();
  }

  private finish(): TensorBody {
    this.skipWhitespace();
    if (this.pos < this.bytes.length) this.syntaxError('the end of the body');
    if (!this.tensor) throw invalidBody(`the body has no "${this.layout.member}" member; expected ${this.wanted()}`);
    return tensorBodyOf(this.tensor);
  }

  private wanted(): string {
    return `{"${this.layout.member}": …} of shape ${formatShape(this.layout.shape)}`;
  }

  private readMember(): void {
    this.skipWhitespace();
    if (this.readMemberName()) {
      // JSON.parse would keep the last of two; two tensors in one request is a client bug worth naming.
      if (this.tensor) throw invalidBody(`"${this.layout.member}" appears twice`, this.layout.member);
      this.tensor = new TensorValuesReader(this.layout, this.pixels, this.into);
      this.pos = this.tensor.feed(this.bytes, this.pos, this.bytes.length, true, this.offset);
    } else this.skipValue();
  }

  /** After a member's value: true at `,` (another member follows), false at the object's `}`. */
  private nextMember(): boolean {
    this.skipWhitespace();
    const c = this.bytes[this.pos];
    if (c === COMMA || c === RBRACE) {
      this.pos++;
      return c === COMMA;
    }
    this.syntaxError("',' or '}'");
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
    return name === this.layout.member;
  }

  /** Checks a number token of a member we do not use; returns where it ends. */
  private skipNumber(): number {
    this.token.read(this.bytes, this.pos, this.bytes.length, true, this.offset);
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
        if (closers.length >= MAX_NESTING) throw invalidBody(`the body nests deeper than ${MAX_NESTING} levels at byte ${this.offset + this.pos}`);
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
    jsonSyntaxError(this.bytes, at, this.offset, expected);
  }
}
