/**
 * request-transformer (Kong PRIORITY 801): changes the request before it is
 * sent upstream — its method, headers, query string, JSON or form body and
 * path — in Kong's order: remove, rename, replace, add, append. `name:value`
 * pairs as in Kong; rename and replace act only on what is there, add only
 * on what is not, append adds a value beside any existing ones.
 */
import type { Field, FieldError } from '../../config/schema.ts';
import { join } from '../../config/schema.ts';
import { definePlugin, type RequestContext } from '../types.ts';
import { appendValue, applyEdits, colonPair, noTemplate, pairsOf, type Edits } from '../transformations.ts';

type Part = 'headers' | 'querystring' | 'body';
const PARTS: readonly Part[] = ['headers', 'querystring', 'body'];

interface TransformerConfig {
  http_method: string | null;
  remove: Record<Part, string[]>;
  rename: Record<Part, string[]>;
  replace: Record<Part, string[]> & { uri: string | null };
  add: Record<Part, string[]>;
  append: Record<Part, string[]>;
}

const list = (check?: (v: string) => string | undefined): Field => ({ type: 'array', default: [], elements: { type: 'string', ...(check ? { check } : {}) } });
const section = (pairs: boolean, extra: Record<string, Field> = {}): Field => ({
  type: 'record',
  default: {},
  fields: {
    body: list(pairs ? colonPair : undefined),
    headers: list(pairs ? colonPair : undefined),
    querystring: list(pairs ? colonPair : undefined),
    ...extra,
  },
});

const transformerFields: Record<string, Field> = {
  http_method: { type: 'string', default: null, check: (v) => (/^[A-Z]+$/.test(v) ? undefined : 'invalid value: ' + v) },
  remove: section(false),
  rename: section(true),
  replace: section(true, { uri: { type: 'string', default: null, check: noTemplate } }),
  add: section(true),
  append: section(true),
};

function editsOf(conf: TransformerConfig, part: Part, lowerCase: boolean): Edits<string> | null {
  const name = (n: string) => (lowerCase ? n.toLowerCase() : n);
  const pairs = (action: 'replace' | 'add' | 'append') => pairsOf(conf[action][part]).map(([n, v]): [string, string] => [name(n), v]);
  const edits = {
    remove: conf.remove[part].map(name),
    rename: pairsOf(conf.rename[part]).map(([from, to]): [string, string] => [name(from), name(to)]),
    replace: pairs('replace'),
    add: pairs('add'),
    append: pairs('append'),
  };
  return Object.values(edits).some((e) => e.length > 0) ? edits : null;
}

/** A query string or form body with the edits made (a repeated argument is a list of values). */
function editedParams(text: string, edits: Edits<string>): string {
  const params = new URLSearchParams(text);
  const args: Record<string, unknown> = {};
  for (const key of new Set(params.keys())) {
    const values = params.getAll(key);
    args[key] = values.length === 1 ? values[0] : values;
  }
  applyEdits(args, edits, appendValue);
  const out = new URLSearchParams();
  for (const [key, value] of Object.entries(args)) for (const v of Array.isArray(value) ? value : [value]) out.append(key, String(v));
  return out.toString();
}

async function transformBody(ctx: RequestContext, edits: Edits<string>): Promise<void> {
  const type = String(ctx.clientHeaders['content-type'] ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
  if (type === 'application/json') {
    const text = (await ctx.readBody()).toString('utf8');
    let body: unknown;
    try {
      body = text.trim() === '' ? {} : JSON.parse(text);
    } catch {
      return; // Kong leaves a body it cannot decode as it is.
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
    applyEdits(body as Record<string, unknown>, edits, appendValue);
    ctx.replaceBody(Buffer.from(JSON.stringify(body)));
  } else if (type === 'application/x-www-form-urlencoded') {
    ctx.replaceBody(Buffer.from(editedParams((await ctx.readBody()).toString('utf8'), edits)));
  }
}

function checkTransformerConfig(config: Record<string, unknown>, path: string, errors: FieldError[]): void {
  const uri = (config.replace as { uri: string | null }).uri;
  if (uri !== null && !uri.startsWith('/')) errors.push({ path: join(join(path, 'replace'), 'uri'), message: 'should start with: /' });
}

export const requestTransformer = definePlugin<TransformerConfig>(
  { name: 'request-transformer', priority: 801, configFields: transformerFields, checkConfig: checkTransformerConfig },
  (conf) => {
    const [headers, query, body] = PARTS.map((part) => editsOf(conf, part, part === 'headers'));
    return {
      access(ctx) {
        if (conf.http_method) ctx.method = conf.http_method;
        if (headers) applyEdits(ctx.upstreamHeaders, headers, (existing, value) => appendValue(existing, value) as string | string[]);
        if (query) ctx.query = editedParams(ctx.query, query);
        if (conf.replace.uri) ctx.upstreamPath = conf.replace.uri;
        if (body) return transformBody(ctx, body);
      },
    };
  },
);
