/**
 * CRC-64 checks of request and response bodies (crc64.ts), as the service makes them:
 * - `x-ms-content-crc64` on a write: the body's CRC-64, checked before the write counts
 *   (`400 Crc64Mismatch`); the answer carries the one computed.
 * - `x-ms-range-get-content-crc64: true` on a ranged read of at most 4 MiB: the range's CRC-64.
 * - Structured messages (`x-ms-structured-body: XSM/1.0; properties=crc64`), what the SDKs
 *   send and ask for with `contentChecksumAlgorithm: 'StorageCrc64'`: a 13-byte header
 *   (version 1, message length u64, flags u16 — 1 = CRC-64 —, segment count u16), then per
 *   segment a 10-byte header (number u16 from 1, content length u64), the content and, with
 *   the flag, its CRC-64; then, with the flag, the CRC-64 of all the content. Integers are
 *   little-endian. A write's message is unwrapped (and every CRC checked) as it streams; a
 *   read that asks for one gets its range wrapped in segments of 4 MiB.
 */
import { Transform, type Readable } from 'node:stream';
import { errors, StorageError } from '../errors.ts';
import { Crc64 } from '../crc64.ts';
import { header, type Operation } from './context.ts';

export const STRUCTURED_BODY = 'XSM/1.0; properties=crc64';
const HEADER_LENGTH = 13;
const SEGMENT_HEADER_LENGTH = 10;
const CRC_LENGTH = 8;
const SEGMENT_CONTENT_LENGTH = 4 * 1024 * 1024;
const CRC64_FLAG = 1;

const crc64Mismatch = () =>
  new StorageError(400, 'Crc64Mismatch', 'The CRC64 value specified in the request did not match with the CRC64 value calculated by the server.');
const invalidStructuredMessage = (detail: string) => new StorageError(400, 'InvalidInput', `One of the request inputs is not valid: ${detail}.`);

/** A CRC-64 header (base64 of 8 bytes), or undefined when absent. */
export function crc64Header(op: Operation, name: string): Buffer | undefined {
  const value = header(op, name);
  if (value === undefined) return undefined;
  const bytes = Buffer.from(value, 'base64');
  if (bytes.length !== CRC_LENGTH || bytes.toString('base64') !== value) throw errors.invalidHeader(name, value);
  return bytes;
}

/** Passes a body through, failing it at its end when its CRC-64 is not `expected`; `done` gets the CRC-64 computed. */
function checkingCrc64(expected: Buffer | undefined, done: (crc: Buffer) => void): Transform {
  const crc = new Crc64();
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      crc.update(chunk);
      callback(null, chunk);
    },
    flush(callback) {
      const computed = crc.digest();
      if (expected && !computed.equals(expected)) return callback(crc64Mismatch());
      done(computed);
      callback();
    },
  });
}

/** Reads a structured message, passing on its content once each segment's CRC-64 (and then the whole one) is checked. */
function unwrapping(contentLength: number): Transform {
  let buffered: Buffer = Buffer.alloc(0);
  let flags = 0;
  let segments = 0;
  let segment = 0;
  let remaining = 0;
  let total = 0;
  let state: 'header' | 'segment-header' | 'content' | 'segment-crc' | 'crc' | 'done' = 'header';
  const whole = new Crc64();
  let part = new Crc64();
  const take = (length: number): Buffer | undefined => {
    if (buffered.length < length) return undefined;
    const taken = buffered.subarray(0, length);
    buffered = buffered.subarray(length);
    return taken;
  };
  const next = () => {
    state = segment < segments ? 'segment-header' : flags & CRC64_FLAG ? 'crc' : 'done';
  };
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
      for (;;) {
        if (state === 'header') {
          const bytes = take(HEADER_LENGTH);
          if (!bytes) break;
          if (bytes[0] !== 1) return callback(invalidStructuredMessage('structured message version'));
          flags = bytes.readUInt16LE(9);
          segments = bytes.readUInt16LE(11);
          next();
        } else if (state === 'segment-header') {
          const bytes = take(SEGMENT_HEADER_LENGTH);
          if (!bytes) break;
          segment++;
          if (bytes.readUInt16LE(0) !== segment) return callback(invalidStructuredMessage('structured message segment number'));
          remaining = Number(bytes.readBigUInt64LE(2));
          total += remaining;
          if (total > contentLength) return callback(invalidStructuredMessage('x-ms-structured-content-length'));
          part = new Crc64();
          state = 'content';
        } else if (state === 'content') {
          if (remaining > 0 && buffered.length === 0) break;
          const bytes = take(Math.min(remaining, buffered.length))!;
          remaining -= bytes.length;
          part.update(bytes);
          whole.update(bytes);
          if (bytes.length) this.push(bytes);
          if (remaining > 0) break;
          if (flags & CRC64_FLAG) state = 'segment-crc';
          else next();
        } else if (state === 'segment-crc') {
          const bytes = take(CRC_LENGTH);
          if (!bytes) break;
          if (!part.digest().equals(bytes)) return callback(crc64Mismatch());
          next();
        } else if (state === 'crc') {
          const bytes = take(CRC_LENGTH);
          if (!bytes) break;
          if (!whole.digest().equals(bytes)) return callback(crc64Mismatch());
          state = 'done';
        } else {
          if (buffered.length) return callback(invalidStructuredMessage('bytes after the structured message'));
          break;
        }
      }
      callback();
    },
    flush(callback) {
      if (state !== 'done' || buffered.length || total !== contentLength) return callback(invalidStructuredMessage('structured message cut short'));
      callback();
    },
  });
}

/** A write's body as its content: unwrapped from a structured message, and checked against `x-ms-content-crc64` when sent. */
export function checkedBody(op: Operation, raw: Readable): Readable {
  let content = raw;
  const structured = header(op, 'x-ms-structured-body');
  if (structured !== undefined) {
    if (structured.toLowerCase() !== STRUCTURED_BODY.toLowerCase()) throw errors.invalidHeader('x-ms-structured-body', structured);
    const length = header(op, 'x-ms-structured-content-length');
    if (length === undefined) throw errors.missingHeader('x-ms-structured-content-length');
    if (!/^\d+$/.test(length)) throw errors.invalidHeader('x-ms-structured-content-length', length);
    content = forward(content, unwrapping(Number(length)));
    op.reply.header('x-ms-structured-body', STRUCTURED_BODY);
  }
  const expected = crc64Header(op, 'x-ms-content-crc64');
  if (expected)
    content = forward(
      content,
      checkingCrc64(expected, (crc) => op.reply.header('x-ms-content-crc64', crc.toString('base64'))),
    );
  return content;
}

/**
 * `source.pipe(through)`, with an error of `source` passed on to `through`. A small body can
 * end, and fail its check, before the handler has attached its consumer; the error is kept
 * on the stream (`errored`), and the consumer's pipeline reports it when it attaches.
 */
function forward(source: Readable, through: Transform): Transform {
  source.on('error', (err) => through.destroy(err));
  through.on('error', () => undefined);
  return source.pipe(through);
}

/** Wraps `length` bytes of content into a structured message, 4 MiB a segment; empty content is one empty segment (the SDK's reader waits for one). */
export function wrapping(length: number): { stream: Transform; messageLength: number } {
  // Empty content is a message of no segments, as the SDKs write it.
  const segments = Math.max(1, Math.ceil(length / SEGMENT_CONTENT_LENGTH));
  const messageLength = HEADER_LENGTH + segments * (SEGMENT_HEADER_LENGTH + CRC_LENGTH) + length + CRC_LENGTH;
  let segment = 0;
  let inSegment = 0;
  let part = new Crc64();
  const whole = new Crc64();
  const segmentHeader = (push: (b: Buffer) => void) => {
    segment++;
    const bytes = Buffer.alloc(SEGMENT_HEADER_LENGTH);
    bytes.writeUInt16LE(segment, 0);
    bytes.writeBigUInt64LE(BigInt(Math.min(SEGMENT_CONTENT_LENGTH, length - (segment - 1) * SEGMENT_CONTENT_LENGTH)), 2);
    push(bytes);
  };
  const start = Buffer.alloc(HEADER_LENGTH);
  start.writeUInt8(1, 0);
  start.writeBigUInt64LE(BigInt(messageLength), 1);
  start.writeUInt16LE(CRC64_FLAG, 9);
  start.writeUInt16LE(segments, 11);
  let started = false;
  const stream = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      const push = (b: Buffer) => this.push(b);
      if (!started) {
        started = true;
        push(start);
        segmentHeader(push);
      }
      let at = 0;
      while (at < chunk.length) {
        if (inSegment === SEGMENT_CONTENT_LENGTH) {
          push(part.digest());
          part = new Crc64();
          inSegment = 0;
          segmentHeader(push);
        }
        const piece = chunk.subarray(at, at + Math.min(chunk.length - at, SEGMENT_CONTENT_LENGTH - inSegment));
        part.update(piece);
        whole.update(piece);
        push(piece);
        inSegment += piece.length;
        at += piece.length;
      }
      callback();
    },
    flush(callback) {
      if (!started) {
        this.push(start);
        segmentHeader((b) => this.push(b));
      }
      this.push(part.digest());
      this.push(whole.digest());
      callback();
    },
  });
  return { stream, messageLength };
}
