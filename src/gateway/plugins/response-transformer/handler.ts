/**
 * response-transformer (Kong PRIORITY 800): changes the answer the client
 * gets — its headers (every answer of a request the plugin ran on) and the
 * keys of a JSON object body (answers whose Content-Type names
 * application/json) — in Kong's order: remove, rename, replace, add,
 * append. JSON values are strings unless `json_types` (position by
 * position) makes them numbers or booleans, as Kong casts them.
 */
import type { Field } from '../../config/schema.ts';
import { addHeader, clearHeader, getHeader, setHeader } from '../headers.ts';
import { applyEdits, colonPair, pairsOf, type Edits } from '../transformations.ts';
import { definePlugin, type PluginHandler } from '../types.ts';

type JsonType = 'string' | 'number' | 'boolean';

interface Section {
  headers: string[];
  json: string[];
  json_types?: JsonType[];
}

interface ResponseTransformerConfig {
  remove: Section;
  rename: Section;
  replace: Section;
  add: Section;
  append: Section;
}

const list = (check?: (v: string) => string | undefined): Field => ({ type: 'array', default: [], elements: { type: 'string', ...(check ? { check } : {}) } });
const section = (pairs: boolean, typed: boolean): Field => ({
  type: 'record',
  default: {},
  fields: {
    headers: list(pairs ? colonPair : undefined),
    json: list(pairs ? colonPair : undefined),
    ...(typed ? { json_types: { type: 'array', default: [], elements: { type: 'string', oneOf: ['boolean', 'number', 'string'] } } } : {}),
  },
});

const responseTransformerFields: Record<string, Field> = {
  remove: section(false, false),
  rename: section(true, false),
  replace: section(true, true),
  add: section(true, true),
  append: section(true, true),
};

/** Kong's cast of a configured JSON value: `tonumber`, `== "true"`, or the string. */
function cast(value: string, type: JsonType | undefined): unknown {
  if (type === 'number') return Number(value);
  if (type === 'boolean') return value === 'true';
  return value;
}

function jsonEdits(conf: ResponseTransformerConfig): Edits<unknown> | null {
  const typed = (s: Section) => pairsOf(s.json).map(([name, value], i): [string, unknown] => [name, cast(value, s.json_types?.[i])]);
  const edits = { remove: conf.remove.json, rename: pairsOf(conf.rename.json), replace: typed(conf.replace), add: typed(conf.add), append: typed(conf.append) };
  return Object.values(edits).some((e) => e.length > 0) ? edits : null;
}

/** Kong's append on a JSON key: a string becomes a list with the new value, a list gets it, anything else is replaced by a list of it. */
const appendJson = (existing: unknown, value: unknown) =>
  Array.isArray(existing) ? [...(existing as unknown[]), value] : typeof existing === 'string' ? [existing, value] : [value];

/** The header edits on the answer's name/value pairs. */
function editHeaders(conf: ResponseTransformerConfig, headers: string[]): void {
  for (const name of conf.remove.headers) clearHeader(headers, name);
  for (const [from, to] of pairsOf(conf.rename.headers)) {
    const value = getHeader(headers, from);
    if (value === undefined) continue;
    clearHeader(headers, from);
    setHeader(headers, to, value);
  }
  for (const [name, value] of pairsOf(conf.replace.headers)) if (getHeader(headers, name) !== undefined) setHeader(headers, name, value);
  for (const [name, value] of pairsOf(conf.add.headers)) if (getHeader(headers, name) === undefined) addHeader(headers, name, value);
  for (const [name, value] of pairsOf(conf.append.headers)) addHeader(headers, name, value);
}

export const responseTransformer = definePlugin<ResponseTransformerConfig>(
  { name: 'response-transformer', priority: 800, configFields: responseTransformerFields },
  (conf) => {
    const json = jsonEdits(conf);
    const handler: PluginHandler = {
      access() {},
      header(_ctx, _status, headers) {
        editHeaders(conf, headers);
      },
    };
    if (json === null) return handler;
    handler.body = (_ctx, _status, headers, body) => {
      if (!(getHeader(headers, 'content-type') ?? '').toLowerCase().includes('application/json')) return body;
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {
        return body; // Kong leaves a body it cannot decode as it is.
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return body;
      applyEdits(parsed as Record<string, unknown>, json, appendJson);
      return Buffer.from(JSON.stringify(parsed));
    };
    return handler;
  },
);
