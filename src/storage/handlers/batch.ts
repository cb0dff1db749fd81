/**
 * Blob Batch (`POST ?comp=batch`, at the service or a container): up to 256 Delete Blob or
 * Set Blob Tier requests in one `multipart/mixed` body. Each sub-request is a whole HTTP
 * request with its own credentials: it is run through this server's own request handling
 * (authentication, authorization, the operation), so a sub-request can do no more than
 * the same request sent alone. The answer is `202` with one `application/http` part per
 * sub-request, in order, each naming its `Content-ID`.
 */
import { randomUUID } from 'node:crypto';
import { errors, StorageError } from '../errors.ts';
import { header, smallBody, type Operation, type Subrequest } from './context.ts';

const MAX_SUBREQUESTS = 256;
const MAX_BATCH_BYTES = 4 * 1024 * 1024;
const CRLF = '\r\n';

function invalidBatch(detail: string): StorageError {
  return new StorageError(400, 'InvalidInput', `One of the request inputs is not valid. ${detail}`);
}

/** The sub-requests of a batch body: their Content-ID, request line and headers (no bodies: neither operation has one). */
function parseBatch(body: string, boundary: string): { contentId: string; request: Subrequest }[] {
  const parts = body.split(`--${boundary}`);
  const last = parts.pop() ?? '';
  if (!last.startsWith('--')) throw invalidBatch('The batch body does not end with its closing boundary.');
  return parts
    .filter((part) => part.trim() !== '')
    .map((part) => {
      const [envelope, message] = splitOnce(part.replace(/^\r?\n/, ''));
      const contentId = /^content-id:\s*(.*)$/im.exec(envelope)?.[1]?.trim() ?? '';
      const lines = message.split(/\r?\n/);
      const start = /^(DELETE|PUT) (\/\S*) HTTP\/1\.1$/.exec(lines[0] ?? '');
      if (!start) throw invalidBatch(`Sub-request ${contentId || '?'} is not a DELETE or PUT request line.`);
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        if (line === '') break;
        const colon = line.indexOf(':');
        if (colon <= 0) throw invalidBatch(`Sub-request ${contentId} has a malformed header.`);
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      return { contentId, request: { method: start[1]!, url: start[2]!, headers } };
    });
}

/** Splits a part into its MIME envelope and the HTTP message after the first blank line. */
function splitOnce(part: string): [string, string] {
  const match = /\r?\n\r?\n/.exec(part);
  return match ? [part.slice(0, match.index), part.slice(match.index + match[0].length)] : [part, ''];
}

/** Only Delete Blob and Set Blob Tier may be batched, all of one kind, and none of them a batch. */
function checkSubrequests(requests: Subrequest[]): void {
  if (requests.length === 0) throw invalidBatch('The batch has no sub-requests.');
  if (requests.length > MAX_SUBREQUESTS)
    throw new StorageError(400, 'ExceedsMaxBatchRequestCount', `The batch operation exceeds the maximum of ${MAX_SUBREQUESTS} sub-requests.`);
  const kind = (r: Subrequest) =>
    r.method === 'DELETE' && !/[?&]comp=/.test(r.url) ? 'delete' : r.method === 'PUT' && /[?&]comp=tier(&|$)/.test(r.url) ? 'tier' : 'other';
  if (requests.some((r) => kind(r) === 'other')) throw invalidBatch('A batch holds only Delete Blob and Set Blob Tier requests.');
  if (new Set(requests.map(kind)).size > 1) throw invalidBatch('All sub-requests of a batch must be of one operation.');
}

export async function submitBatch(op: Operation): Promise<void> {
  const contentType = header(op, 'content-type') ?? '';
  const boundary = /^multipart\/mixed;\s*boundary=("?)([^";]+)\1/i.exec(contentType)?.[2];
  if (!boundary) throw errors.invalidHeader('Content-Type', contentType);
  const subrequests = parseBatch(await smallBody(op, MAX_BATCH_BYTES), boundary);
  checkSubrequests(subrequests.map((s) => s.request));
  const answered = [];
  // One after another, in order, as the service applies them.
  for (const { contentId, request } of subrequests) answered.push({ contentId, answer: await op.runSubrequest(request) });
  const responseBoundary = `batchresponse_${randomUUID()}`;
  const parts = answered.map(({ contentId, answer }) =>
    [
      `--${responseBoundary}`,
      'Content-Type: application/http',
      `Content-ID: ${contentId}`,
      '',
      `HTTP/1.1 ${answer.status} ${answer.statusText}`,
      ...Object.entries(answer.headers).map(([name, value]) => `${name}: ${value}`),
      '',
      answer.body,
    ].join(CRLF),
  );
  op.reply.header('content-type', `multipart/mixed; boundary=${responseBoundary}`);
  await op.reply.code(202).send(`${parts.join('')}--${responseBoundary}--${CRLF}`);
}
