/**
 * correlation-id (Kong PRIORITY 100001, first of all): gives each request
 * an id in `header_name` (Kong-Request-ID) unless the client sent one,
 * passes it upstream and, with `echo_downstream`, back to the client.
 */
import { randomUUID } from 'node:crypto';
import type { Field } from '../../config/schema.ts';
import { definePlugin } from '../types.ts';

interface CorrelationConfig {
  header_name: string;
  generator: 'uuid' | 'uuid#counter';
  echo_downstream: boolean;
}

const correlationFields: Record<string, Field> = {
  header_name: { type: 'string', default: 'Kong-Request-ID' },
  generator: {
    type: 'string',
    default: 'uuid#counter',
    oneOf: ['uuid', 'uuid#counter', 'tracker'],
    check: (v) => (v === 'tracker' ? "not supported by offcloud's gateway (generator 'tracker'; use uuid or uuid#counter)" : undefined),
  },
  echo_downstream: { type: 'boolean', default: false },
};

export const correlationId = definePlugin<CorrelationConfig>({ name: 'correlation-id', priority: 100001, configFields: correlationFields }, (conf) => {
  const header = conf.header_name.toLowerCase();
  // uuid#counter: one uuid per plugin instance and process, then a counter, as Kong keeps one per worker.
  const base = randomUUID();
  let counter = 0;
  const next = () => (conf.generator === 'uuid' ? randomUUID() : `${base}#${++counter}`);
  return {
    access(ctx) {
      const given = ctx.clientHeaders[header];
      const id = typeof given === 'string' && given !== '' ? given : next();
      ctx.upstreamHeaders[header] = id;
      if (conf.echo_downstream) ctx.responseHeaders[conf.header_name] = id;
    },
  };
});
