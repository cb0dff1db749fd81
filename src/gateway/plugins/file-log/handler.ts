/**
 * file-log (Kong PRIORITY 9): appends each request's log entry (Kong's
 * serializer, one JSON object a line) to `path`. As in Kong, the file is
 * opened once per path and kept open (every plugin writing to that path
 * shares it), or opened for every entry with `reopen` (for log rotation).
 * Writes leave the event loop; entries keep their order.
 */
import { open, type FileHandle } from 'node:fs/promises';
import type { Field } from '../../config/schema.ts';
import { unsupported } from '../../config/schema.ts';
import { serializeLog } from '../log-serializer.ts';
import { definePlugin } from '../types.ts';
import type { Logger } from 'pino';

interface FileLogConfig {
  path: string;
  reopen: boolean;
}

const fileLogFields: Record<string, Field> = {
  // Kong's pattern for a file name: no *, &, % or backquote.
  path: { type: 'string', required: true, check: (v) => (/^[^*&%`]+$/.test(v) ? undefined : 'not a valid filename') },
  reopen: { type: 'boolean', default: false },
  custom_fields_by_lua: unsupported('custom_fields_by_lua: Lua code'),
};

/** The lines waiting for one file, written in order by one writer at a time. */
class Appender {
  private pending: string[] = [];
  private writing = false;
  private handle: FileHandle | null = null;

  constructor(
    private readonly path: string,
    private readonly logger: Logger,
  ) {}

  append(line: string, reopen: boolean): void {
    this.pending.push(line);
    if (!this.writing) void this.drain(reopen);
  }

  private async drain(reopen: boolean): Promise<void> {
    this.writing = true;
    while (this.pending.length > 0) {
      const text = this.pending.join('');
      this.pending = [];
      try {
        if (reopen) await this.close();
        this.handle ??= await open(this.path, 'a');
        await this.handle.appendFile(text);
      } catch (err) {
        this.logger.error({ err, path: this.path }, '[file-log] failed to write the log file');
        await this.close();
      }
    }
    this.writing = false;
  }

  private async close(): Promise<void> {
    const handle = this.handle;
    this.handle = null;
    await handle?.close().catch(() => {});
  }
}

/** One appender per path for the process, as Kong keeps one descriptor per path. */
const appenders = new Map<string, Appender>();

export const fileLog = definePlugin<FileLogConfig>({ name: 'file-log', priority: 9, configFields: fileLogFields }, (conf, env) => {
  let appender = appenders.get(conf.path);
  if (!appender) appenders.set(conf.path, (appender = new Appender(conf.path, env.logger)));
  const target = appender;
  return {
    access() {},
    log(ctx, entry) {
      target.append(`${JSON.stringify(serializeLog(ctx, entry))}\n`, conf.reopen);
    },
  };
});
