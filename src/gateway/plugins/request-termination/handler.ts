/**
 * request-termination (Kong PRIORITY 2): answers every request itself with
 * the configured status and `message` (as Kong's `{"message": …}`) or raw
 * `body` and `content_type`; with `trigger`, only requests carrying that
 * header or query argument.
 */
import { STATUS_CODES } from 'node:http';
import type { Field, FieldError } from '../../config/schema.ts';
import { GatewayError, PluginAnswer } from '../../errors.ts';
import { definePlugin } from '../types.ts';

interface TerminationConfig {
  status_code: number;
  message: string | null;
  body: string | null;
  content_type: string | null;
  trigger: string | null;
  echo: boolean;
}

const terminationFields: Record<string, Field> = {
  status_code: { type: 'integer', default: 503, between: [100, 599] },
  message: { type: 'string', default: null },
  body: { type: 'string', default: null },
  content_type: { type: 'string', default: null },
  trigger: { type: 'string', default: null },
  echo: { type: 'boolean', default: false, check: (v) => (v ? "not supported by offcloud's gateway (echo)" : undefined) },
};

function checkTerminationConfig(config: Record<string, unknown>, path: string, errors: FieldError[]): void {
  if (config.message !== null && config.body !== null) errors.push({ path, message: "'message' cannot be used with 'body'" });
  if (config.content_type !== null && config.body === null) errors.push({ path, message: "'content_type' requires 'body'" });
}

export const requestTermination = definePlugin<TerminationConfig>(
  { name: 'request-termination', priority: 2, configFields: terminationFields, checkConfig: checkTerminationConfig },
  (conf) => {
    const answer = () =>
      conf.body !== null
        ? new PluginAnswer(conf.status_code, conf.body, { 'Content-Type': conf.content_type ?? 'application/json; charset=utf-8' })
        : new GatewayError(conf.status_code, conf.message ?? STATUS_CODES[conf.status_code] ?? 'Terminated');
    return {
      access(ctx) {
        if (conf.trigger !== null) {
          const name = conf.trigger;
          if (ctx.clientHeaders[name.toLowerCase()] === undefined && !new URLSearchParams(ctx.query).has(name)) return;
        }
        throw answer();
      },
    };
  },
);
