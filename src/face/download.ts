/**
 * The image of a `{"url": …}` request, fetched by the container as the real
 * service does: http and https only, at most MAX_IMAGE_BYTES, within a time
 * limit, a few redirects at most. Every failure is an InvalidURL.
 */
import { Agent, interceptors, request, type Dispatcher } from 'undici';
import { FaceApiError, imageTooBig, invalidUrl } from './errors.ts';

export interface DownloadLimits {
  maxBytes: number;
  timeoutMs: number;
}

const MAX_REDIRECTIONS = 3;

export function createDownloader(): Dispatcher {
  return new Agent({ connections: 16 }).compose(interceptors.redirect({ maxRedirections: MAX_REDIRECTIONS }));
}

function parseImageUrl(raw: unknown): URL {
  if (typeof raw !== 'string' || raw.trim() === '') throw invalidUrl();
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw invalidUrl();
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalidUrl('Invalid image URL: only http and https URLs are accepted.');
  return url;
}

export async function downloadImage(raw: unknown, limits: DownloadLimits, dispatcher: Dispatcher): Promise<Buffer> {
  const url = parseImageUrl(raw);
  const signal = AbortSignal.timeout(limits.timeoutMs);
  try {
    const response = await request(url, { method: 'GET', dispatcher, signal, headersTimeout: limits.timeoutMs, bodyTimeout: limits.timeoutMs });
    if (response.statusCode < 200 || response.statusCode > 299) {
      await response.body.dump();
      throw invalidUrl(`Failed to download image from the specified URL. Remote server error returned: ${response.statusCode}.`);
    }
    const declared = Number(response.headers['content-length']);
    if (Number.isFinite(declared) && declared > limits.maxBytes) {
      response.body.destroy();
      throw imageTooBig();
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      size += (chunk as Buffer).length;
      if (size > limits.maxBytes) {
        response.body.destroy();
        throw imageTooBig();
      }
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks);
  } catch (err) {
    if (err instanceof FaceApiError) throw err;
    const reason = signal.aborted ? 'the download timed out' : (err as Error).message;
    throw invalidUrl(`Failed to download image from the specified URL: ${reason}.`);
  }
}
