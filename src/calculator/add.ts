/** The calculator's one operation (§4.6): the sum of two integers of any size. */
import { WireError } from '../common/errors.ts';

/** Longest integer accepted, in digits; longer segments are refused. */
export const MAX_DIGITS = 1000;

const INTEGER = new RegExp(`^[+-]?\\d{1,${MAX_DIGITS}}$`);

export class InvalidOperandError extends WireError {
  constructor(
    readonly segment: string,
    readonly reason: string,
  ) {
    super(400, 'InvalidOperand', `invalid operand ${JSON.stringify(segment)}: ${reason}`);
  }
}

export function parseOperand(segment: string): bigint {
  if (segment === '') throw new InvalidOperandError(segment, 'an integer is required');
  if (/^[+-]?\d+$/.test(segment) && !INTEGER.test(segment)) {
    throw new InvalidOperandError(segment.slice(0, 20) + '…', `more than ${MAX_DIGITS} digits`);
  }
  if (!INTEGER.test(segment)) {
    throw new InvalidOperandError(segment.slice(0, 64), 'expected an integer (digits with an optional sign)');
  }
  return BigInt(segment);
}

export function add(a: string, b: string): string {
  return (parseOperand(a) + parseOperand(b)).toString();
}
