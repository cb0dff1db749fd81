/**
 * The face API's one error mapping: every refusal is a FaceApiError with the
 * status, code and message of the Face v1.0 reference, sent as
 * `{"error":{"code","message"}}` (the envelope the official client reads into
 * RestError.code).
 */
import type { FastifyRequest } from 'fastify';
import { WireError, type WireAnswer } from '../common/errors.ts';

export type FaceErrorCode = 'BadArgument' | 'InvalidURL' | 'InvalidImage' | 'InvalidImageSize' | 'NotFound' | 'InternalServerError';

export class FaceApiError extends WireError {
  declare readonly code: FaceErrorCode;

  constructor(status: number, code: FaceErrorCode, message: string) {
    super(status, code, message);
  }
}

export const badArgument = (message: string) => new FaceApiError(400, 'BadArgument', message);
export const invalidUrl = (message = 'Invalid image URL.') => new FaceApiError(400, 'InvalidURL', message);
export const invalidImage = (message = 'Decoding error, image format unsupported.') => new FaceApiError(400, 'InvalidImage', message);
export const imageTooSmall = (message = 'Image size is too small.') => new FaceApiError(400, 'InvalidImageSize', message);
export const imageTooBig = (message = 'Image size is too big.') => new FaceApiError(400, 'InvalidImageSize', message);
export const invalidMediaType = () => new FaceApiError(415, 'BadArgument', 'Invalid Media Type.');

/**
 * Maps what fastify itself throws (body parsing, limits, media types) to the
 * reference's codes; anything else is a 500 whose details stay in the log.
 */
function toFaceApiError(error: unknown, request: FastifyRequest): FaceApiError {
  if (error instanceof FaceApiError) return error;
  const code = (error as { code?: string }).code;
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      // A {"url"} body has its own small limit: too large is a bad argument, not a big image.
      return /^application\/json/i.test(request.headers['content-type'] ?? '') ? badArgument('Invalid request body: too large.') : imageTooBig();
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return invalidMediaType();
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return badArgument('JSON parsing error.');
    case 'FST_ERR_CTP_EMPTY_TYPE':
      return invalidMediaType();
    default:
      break;
  }
  if ((error as { statusCode?: number }).statusCode === 400) return badArgument('Invalid request body.');
  return new FaceApiError(500, 'InternalServerError', 'An internal error occurred.');
}

/** Any failure of a request, as the face API answers it. */
export function toWireError(error: unknown, request: FastifyRequest): WireAnswer {
  const apiError = toFaceApiError(error, request);
  return { status: apiError.status, body: { error: { code: apiError.code, message: apiError.message } } };
}
