/**
 * The service's answer held whole for plugins with a body phase (Kong's
 * body_filter with the whole body: response-transformer's JSON edits,
 * proxy-cache storing it): the head waits until the body is complete, the
 * plugins then edit or read the body, and the answer goes out with its new
 * Content-Length. An answer larger than WHOLE_ANSWER_LIMIT is not held:
 * it goes out unchanged, streamed, from the byte where the limit was met.
 */
import { clearHeader } from '../plugins/headers.ts';
import type { PluginHandler, RequestContext } from '../plugins/types.ts';
import type { AbortHandler, DownstreamResponse } from '../http/server.ts';

/** Largest answer held for a body phase (bytes). */
export const WHOLE_ANSWER_LIMIT = 16 * 1024 * 1024;

/** What the upstream side writes the answer's body to: the client's answer itself, or a WholeAnswer before it. */
export type AnswerSink = Pick<DownstreamResponse, 'write' | 'end' | 'onceDrained' | 'destroyed' | 'abortHandler'>;

export class WholeAnswer implements AnswerSink {
  private status = 0;
  private headers: string[] = [];
  private chunks: Buffer[] = [];
  private size = 0;
  /** Past the limit: passing the rest through. */
  private streaming = false;

  constructor(
    private readonly res: DownstreamResponse,
    private readonly ctx: RequestContext,
    private readonly plugins: readonly PluginHandler[],
  ) {}

  get destroyed(): boolean {
    return this.res.destroyed;
  }

  get abortHandler(): AbortHandler | null {
    return this.res.abortHandler;
  }

  set abortHandler(handler: AbortHandler | null) {
    this.res.abortHandler = handler;
  }

  /** The answer's head, after the header phases. */
  head(status: number, headers: string[]): void {
    this.status = status;
    this.headers = headers;
  }

  write(chunk: Buffer | string): boolean {
    const data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (this.streaming) return this.res.write(data);
    this.chunks.push(data);
    this.size += data.length;
    if (this.size <= WHOLE_ANSWER_LIMIT) return true;
    this.streaming = true;
    this.res.writeHead(this.status, this.headers);
    const held = Buffer.concat(this.chunks);
    this.chunks = [];
    return this.res.write(held);
  }

  onceDrained(fn: () => void): void {
    this.res.onceDrained(fn);
  }

  end(): void {
    if (this.streaming) return this.res.end();
    let body: Buffer = Buffer.concat(this.chunks);
    this.chunks = [];
    // An answer without a body (to HEAD, 204, 304) still goes through the body phases, its head unchanged: proxy-cache stores it.
    for (const plugin of this.plugins) body = plugin.body!(this.ctx, this.status, this.headers, body);
    const bodyless = this.ctx.method === 'HEAD' || this.status === 204 || this.status === 304;
    if (!bodyless) {
      clearHeader(this.headers, 'content-length');
      clearHeader(this.headers, 'transfer-encoding');
      this.headers.push('Content-Length', String(body.length));
    }
    this.res.writeHead(this.status, this.headers);
    this.res.end(body);
  }
}
