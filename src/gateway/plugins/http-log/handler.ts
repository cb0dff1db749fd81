/**
 * http-log (Kong PRIORITY 12): sends each request's log entry (Kong's
 * serializer) to `http_endpoint` through Kong's queue: entries are batched
 * up to `queue.max_batch_size` (one JSON object per request when 1, else a
 * JSON array) or until `queue.max_coalescing_delay` seconds passed, a
 * failed send (no answer, or a status of 400 or more) is tried again with
 * a doubling delay from `initial_retry_delay` up to `max_retry_delay` for
 * `max_retry_time` seconds, then dropped with an error in the log. Userinfo
 * in the endpoint's URL becomes Basic authorization, as in Kong.
 */
import type { Logger } from 'pino';
import type { Field } from '../../config/schema.ts';
import { unsupported } from '../../config/schema.ts';
import { serializeLog } from '../log-serializer.ts';
import { definePlugin } from '../types.ts';

interface QueueConfig {
  max_batch_size: number;
  max_coalescing_delay: number;
  max_entries: number;
  max_bytes: number | null;
  max_retry_time: number;
  initial_retry_delay: number;
  max_retry_delay: number;
}

interface HttpLogConfig {
  http_endpoint: string;
  method: 'POST' | 'PUT' | 'PATCH';
  content_type: string;
  timeout: number;
  headers: Record<string, string> | null;
  queue: QueueConfig;
}

function checkEndpoint(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'missing host in url';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `invalid scheme: '${url.protocol.slice(0, -1)}'`;
  return undefined;
}

const deprecated = (now: string): Field => ({ type: 'any', noEffect: `deprecated in Kong 3.x; use ${now}` });

const httpLogFields: Record<string, Field> = {
  http_endpoint: { type: 'string', required: true, check: checkEndpoint },
  method: { type: 'string', default: 'POST', oneOf: ['POST', 'PUT', 'PATCH'] },
  content_type: { type: 'string', default: 'application/json', oneOf: ['application/json', 'application/json; charset=utf-8'] },
  timeout: { type: 'number', default: 10000 },
  keepalive: { type: 'number', default: 60000 },
  retry_count: deprecated('queue.max_retry_time'),
  queue_size: deprecated('queue.max_batch_size'),
  flush_timeout: deprecated('queue.max_coalescing_delay'),
  headers: {
    type: 'any',
    default: null,
    check: (v) =>
      typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((h) => typeof h === 'string')
        ? undefined
        : 'expected a map of strings',
  },
  custom_fields_by_lua: unsupported('custom_fields_by_lua: Lua code'),
  queue: {
    type: 'record',
    default: {},
    fields: {
      name: { type: 'string', default: null },
      max_batch_size: { type: 'integer', default: 1, between: [1, 1_000_000] },
      max_coalescing_delay: { type: 'number', default: 1, between: [0, 3600] },
      max_entries: { type: 'integer', default: 10000, between: [1, 1_000_000] },
      max_bytes: { type: 'integer', default: null },
      max_retry_time: { type: 'number', default: 60 },
      initial_retry_delay: { type: 'number', default: 0.01, between: [0.001, 1_000_000] },
      max_retry_delay: { type: 'number', default: 60, between: [0.001, 1_000_000] },
      // -1 (Kong: no queue, each entry sent at once) is accepted; batches are still sent one at a time here.
      concurrency_limit: { type: 'integer', default: 1, check: (v) => (v === 1 || v === -1 ? undefined : 'expected one of: -1, 1') },
    },
  },
};

/** Kong's queue for one plugin instance: batches, one send at a time, retries with back-off. */
class LogQueue {
  private entries: string[] = [];
  private bytes = 0;
  private timer: NodeJS.Timeout | null = null;
  private sending = false;
  private warnedFull = false;
  private readonly send: (body: string) => Promise<void>;

  constructor(
    private readonly conf: HttpLogConfig,
    private readonly logger: Logger,
  ) {
    const url = new URL(conf.http_endpoint);
    const headers: Record<string, string> = { 'content-type': conf.content_type, ...conf.headers };
    if (url.username)
      headers.authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
    url.username = '';
    url.password = '';
    const endpoint = url.href;
    this.send = async (body) => {
      const res = await fetch(endpoint, { method: conf.method, headers, body, signal: AbortSignal.timeout(conf.timeout) });
      await res.arrayBuffer();
      if (res.status >= 400) throw new Error(`request to ${url.host} returned status code ${res.status}`);
    };
  }

  add(entry: string): void {
    const { queue } = this.conf;
    const over = this.entries.length >= queue.max_entries || (queue.max_bytes !== null && this.bytes + entry.length > queue.max_bytes);
    if (over) {
      if (!this.warnedFull) this.logger.warn(`[http-log] queue full (max_entries ${queue.max_entries}): log entries dropped`);
      this.warnedFull = true;
      return;
    }
    this.warnedFull = false;
    this.entries.push(entry);
    this.bytes += entry.length;
    if (this.sending) return;
    if (this.entries.length >= queue.max_batch_size) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), queue.max_coalescing_delay * 1000).unref();
  }

  private async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.sending = true;
    while (this.entries.length > 0) {
      const batch = this.entries.splice(0, this.conf.queue.max_batch_size);
      this.bytes -= batch.reduce((n, e) => n + e.length, 0);
      await this.deliver(this.conf.queue.max_batch_size === 1 ? batch[0]! : `[${batch.join(',')}]`, batch.length);
      // A partial batch waits for its coalescing delay again.
      if (this.entries.length > 0 && this.entries.length < this.conf.queue.max_batch_size) {
        this.timer = setTimeout(() => void this.flush(), this.conf.queue.max_coalescing_delay * 1000).unref();
        break;
      }
    }
    this.sending = false;
  }

  private async deliver(body: string, count: number): Promise<void> {
    const { queue } = this.conf;
    const giveUpAt = Date.now() + queue.max_retry_time * 1000;
    let delay = queue.initial_retry_delay * 1000;
    for (;;) {
      try {
        await this.send(body);
        return;
      } catch (err) {
        if (Date.now() + delay > giveUpAt) {
          this.logger.error({ err }, `[http-log] could not send ${count} log entries after retrying for ${queue.max_retry_time} s; dropped`);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, delay).unref());
        delay = Math.min(delay * 2, queue.max_retry_delay * 1000);
      }
    }
  }
}

export const httpLog = definePlugin<HttpLogConfig>({ name: 'http-log', priority: 12, configFields: httpLogFields }, (conf, env) => {
  const queue = new LogQueue(conf, env.logger);
  return {
    access() {},
    log(ctx, entry) {
      queue.add(JSON.stringify(serializeLog(ctx, entry)));
    },
  };
});
