/**
 * The CRC-64 the storage service uses for `x-ms-content-crc64` and structured messages:
 * polynomial 0x9A6C9329AC4BC9B5 in its reflected (LSB-first) form, register started at
 * all ones and inverted at the end (the parameters of the catalogue's CRC-64/NVME), written
 * on the wire as the 8 bytes of the 64-bit value, least significant first. The register is
 * kept as two 32-bit halves so that no BigInt arithmetic runs per byte.
 */
const POLYNOMIAL = 0x9a6c9329ac4bc9b5n;

/** Table of the register's change per low byte, as low and high 32-bit halves. */
const LOW = new Uint32Array(256);
const HIGH = new Uint32Array(256);
for (let i = 0; i < 256; i++) {
  let value = BigInt(i);
  for (let bit = 0; bit < 8; bit++) value = value & 1n ? (value >> 1n) ^ POLYNOMIAL : value >> 1n;
  LOW[i] = Number(value & 0xffffffffn);
  HIGH[i] = Number(value >> 32n);
}

/** A running CRC-64 over bytes given in any number of parts. */
export class Crc64 {
  private low = 0xffffffff;
  private high = 0xffffffff;

  update(bytes: Uint8Array): this {
    let { low, high } = this;
    for (let i = 0; i < bytes.length; i++) {
      const index = (low ^ bytes[i]!) & 0xff;
      low = ((low >>> 8) | (high << 24)) ^ LOW[index]!;
      high = (high >>> 8) ^ HIGH[index]!;
    }
    this.low = low >>> 0;
    this.high = high >>> 0;
    return this;
  }

  /** The 8 bytes of the result, least significant first. */
  digest(): Buffer {
    const out = Buffer.alloc(8);
    out.writeUInt32LE(~this.low >>> 0, 0);
    out.writeUInt32LE(~this.high >>> 0, 4);
    return out;
  }
}

export function crc64(bytes: Uint8Array): Buffer {
  return new Crc64().update(bytes).digest();
}
