/**
 * request-size-limiting (Kong PRIORITY 951): refuses a body larger than
 * `allowed_payload_size` (in `size_unit`) with 413 `Request size limit
 * exceeded`; a body without Content-Length is read and measured, or
 * refused with 411 under `require_content_length`.
 */
import type { Field } from '../../config/schema.ts';
import { GatewayError } from '../../errors.ts';
import { definePlugin } from '../types.ts';

interface SizeConfig {
  allowed_payload_size: number;
  size_unit: 'megabytes' | 'kilobytes' | 'bytes';
  require_content_length: boolean;
}

const sizeFields: Record<string, Field> = {
  allowed_payload_size: { type: 'integer', default: 128, between: [0, Number.MAX_SAFE_INTEGER] },
  size_unit: { type: 'string', default: 'megabytes', oneOf: ['megabytes', 'kilobytes', 'bytes'] },
  require_content_length: { type: 'boolean', default: false },
};

const UNIT = { megabytes: 2 ** 20, kilobytes: 2 ** 10, bytes: 1 };
const tooLarge = () => new GatewayError(413, 'Request size limit exceeded');

export const requestSizeLimiting = definePlugin<SizeConfig>({ name: 'request-size-limiting', priority: 951, configFields: sizeFields }, (conf) => {
  const limit = conf.allowed_payload_size * UNIT[conf.size_unit];
  return {
    access(ctx) {
      const declared = ctx.clientHeaders['content-length'];
      if (declared !== undefined) {
        if (Number(declared) > limit) throw tooLarge();
        return;
      }
      if (ctx.clientHeaders['transfer-encoding'] === undefined) return;
      if (conf.require_content_length) throw new GatewayError(411, 'A valid Content-Length header is required');
      return ctx.readBody().then((body) => {
        if (body.length > limit) throw tooLarge();
      });
    },
  };
});
