/**
 * How a run's output is framed on the wire (§4.5, §6): Server-Sent Events by
 * default — each line `data: <line>` and a blank line, flushed as it comes, so
 * curl -N and a browser EventSource both see lines live — or bare lines for
 * clients that ask for `text/plain`. The end of the run is an `exit` event
 * (SSE) or an `X-Script-Exit` trailer (plain).
 */
import type { ServerResponse } from 'node:http';
import type { OutputStream, RunOutput, RunResult } from './run.ts';

export type Framing = 'sse' | 'plain';

/** Plain lines only when the client prefers text/plain to an event stream. */
export function chooseFraming(accept: string | undefined): Framing {
  const wanted = (accept ?? '').toLowerCase();
  return wanted.includes('text/plain') && !wanted.includes('text/event-stream') ? 'plain' : 'sse';
}

/**
 * The id the exit event carries. A browser EventSource reconnects when a
 * stream ends and sends it back as Last-Event-ID; such a request is answered
 * 204, which tells the EventSource to stop instead of running the script again.
 */
export const EXIT_EVENT_ID_PREFIX = 'exit:';
/** Milliseconds an EventSource waits before that reconnect. */
const RECONNECT_MS = 1000;

export function exitSummary(result: RunResult): string {
  return result.signal ? `signal=${result.signal}; reason=${result.reason}` : `code=${result.code}; reason=${result.reason}`;
}

export class ScriptResponse implements RunOutput {
  private closed = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly framing: Framing,
  ) {
    res.once('close', () => {
      this.closed = true;
    });
  }

  /** Sends the headers at once, so the client knows the run started before any line. */
  open(): void {
    const headers: Record<string, string> =
      this.framing === 'sse'
        ? { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' }
        : { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-cache', trailer: 'X-Script-Exit', 'x-accel-buffering': 'no' };
    this.res.writeHead(200, headers);
    this.res.flushHeaders();
  }

  writeLine(stream: OutputStream, line: string): boolean {
    if (this.closed) return true;
    if (this.framing === 'plain') return stream === 'stdout' ? this.res.write(`${line}\n`) : true;
    return this.res.write(stream === 'stdout' ? `data: ${line}\n\n` : `event: stderr\ndata: ${line}\n\n`);
  }

  /** Calls `listener` once the connection is gone or the response over (at once if it already is). */
  whenClosed(listener: () => void): void {
    if (this.closed) listener();
    else this.res.once('close', listener);
  }

  onDrain(resume: () => void): void {
    if (this.closed) resume();
    else this.res.once('drain', resume);
  }

  finish(result: RunResult, runId: string): void {
    if (this.closed) return;
    if (this.framing === 'sse') {
      const data = JSON.stringify({ code: result.code, signal: result.signal, reason: result.reason });
      this.res.end(`event: exit\nid: ${EXIT_EVENT_ID_PREFIX}${runId}\nretry: ${RECONNECT_MS}\ndata: ${data}\n\n`);
    } else {
      this.res.addTrailers({ 'X-Script-Exit': exitSummary(result) });
      this.res.end();
    }
  }
}
