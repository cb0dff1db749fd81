/**
 * The image of a `{"url": …}` request, fetched by the container as the real
 * service does: http and https only, at most MAX_IMAGE_BYTES, within a time
 * limit, a few redirects at most.
 *
 * A container inside a network must not become a way into it: by default
 * every connection, redirects included, goes only to a public address (the
 * name is resolved and checked at connect time, so a name that turns private
 * between checks cannot slip through), and every failure to fetch is the same
 * InvalidURL, so the answer does not tell a closed port from an open one or
 * from a refused address. `--url-allow-private` lifts the address rule.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { Agent, buildConnector, interceptors, request, type Dispatcher } from 'undici';
import { FaceApiError, imageTooBig, invalidUrl } from './errors.ts';

export interface DownloadLimits {
  maxBytes: number;
  timeoutMs: number;
}

const MAX_REDIRECTIONS = 3;
const FETCH_FAILED = 'Failed to download image from the specified URL.';

/** Loopback, private, link-local, shared, unspecified, multicast and reserved ranges (IANA special-purpose registries). */
const NOT_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 127],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
  ['2002::', 16],
] as const) {
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv6');
}

export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !NOT_PUBLIC.check(address, 'ipv4');
  if (family !== 6) return false;
  // An IPv4 address written as IPv6 (::ffff:a.b.c.d or ::ffff:hhhh:hhhh) is judged as the IPv4 address.
  const mapped = /^::ffff:(?:0:)?([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (mapped) {
    const [high, low] = [parseInt(mapped[1]!, 16), parseInt(mapped[2]!, 16)];
    return isPublicAddress(`${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`);
  }
  const dotted = /^::ffff:(?:0:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted) return isPublicAddress(dotted[1]!);
  return !NOT_PUBLIC.check(address, 'ipv6');
}

/** The address to connect to for `hostname`, refused unless every address it resolves to is public. */
async function publicAddressOf(hostname: string): Promise<string> {
  const host = hostname.replace(/^\[(.*)\]$/, '$1');
  const addresses = isIP(host) ? [host] : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  if (addresses.length === 0 || !addresses.every(isPublicAddress)) throw new Error(`${hostname} is not a public address`);
  return addresses[0]!;
}

export interface DownloaderOptions {
  /** Allow loopback, private and link-local targets (tests, trusted networks). */
  allowPrivate: boolean;
}

export function createDownloader({ allowPrivate }: DownloaderOptions): Dispatcher {
  const direct = buildConnector({});
  const connect: buildConnector.connector = allowPrivate
    ? direct
    : (options, callback) => {
        publicAddressOf(options.hostname).then(
          (address) =>
            direct({ ...options, hostname: address, servername: options.servername ?? (isIP(options.hostname) ? undefined : options.hostname) }, callback),
          (err: Error) => callback(err, null),
        );
      };
  return new Agent({ connections: 16, connect }).compose(interceptors.redirect({ maxRedirections: MAX_REDIRECTIONS }));
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
      throw invalidUrl(FETCH_FAILED);
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
    // One answer for a refused address, a closed port, a reset, a time-out or a TLS failure.
    throw invalidUrl(FETCH_FAILED);
  }
}
