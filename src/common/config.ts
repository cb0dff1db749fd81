/**
 * Configuration: each component declares a schema of options; values come from
 * command-line flags, then OFFCLOUD_<COMPONENT>_<KEY> environment variables,
 * then the config file's section for the component, then the schema default.
 * Every value is validated; a bad one stops start-up with one line naming it.
 */
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Logger } from 'pino';
import { ConfigError } from './errors.ts';

interface BaseSpec<T> {
  description: string;
  default: T;
}
export interface StringOption extends BaseSpec<string> {
  type: 'string';
  /** Allowed values; any string when absent. */
  choices?: readonly string[];
}
export interface IntegerOption extends BaseSpec<number> {
  type: 'integer';
  min?: number;
  max?: number;
}
export interface BooleanOption extends BaseSpec<boolean> {
  type: 'boolean';
}
export interface ListOption extends BaseSpec<string[]> {
  type: 'list';
}
export type OptionSpec = StringOption | IntegerOption | BooleanOption | ListOption;
export type OptionSchema = Record<string, OptionSpec>;

interface ValueOfType {
  string: string;
  integer: number;
  boolean: boolean;
  list: string[];
}
export type OptionValues<S extends OptionSchema> = {
  -readonly [K in keyof S]: ValueOfType[S[K]['type']];
};

/** Options every component has. */
export const commonOptions = {
  host: { type: 'string', default: '127.0.0.1', description: 'address to listen on' },
  dataDir: {
    type: 'string',
    default: '.offcloud',
    description: 'folder for keys, certificates and stored state',
  },
  logLevel: {
    type: 'string',
    default: 'info',
    choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    description: 'log level',
  },
  tlsNames: {
    type: 'list',
    default: [],
    description: "more host names and IP addresses the local CA's server certificate carries (comma-separated; e.g. a Docker host's name)",
  },
} as const satisfies OptionSchema;

/**
 * How long a TLS port waits for a client's handshake: Node's own default (120 s)
 * lets silent connections pile up until the process runs out of descriptors.
 */
export const DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS = 10_000;

/** Options of components that serve TLS. */
export const tlsOptions = {
  tlsCert: {
    type: 'string',
    default: '',
    description: 'PEM certificate file (default: a leaf of the local CA in the data dir)',
  },
  tlsKey: { type: 'string', default: '', description: 'PEM private key file for --tls-cert' },
  tlsHandshakeTimeout: {
    type: 'integer',
    default: DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS,
    min: 100,
    max: 600_000,
    description: 'ms a client may take to finish the TLS handshake on a TLS port; a connection that has not is closed',
  },
} as const satisfies OptionSchema;

export function portOption(defaultPort: number, what = 'port to listen on (0 = any free port)'): IntegerOption {
  return { type: 'integer', default: defaultPort, min: 0, max: 65535, description: what };
}

/** Things a running component may be handed instead of building them itself. */
export interface RuntimeExtras {
  logger?: Logger;
}

export function kebab(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** OFFCLOUD_<COMPONENT>_<KEY>; with no component (up's own options, the common ones), OFFCLOUD_<KEY>. */
export function envName(component: string, key: string): string {
  return ['OFFCLOUD', component, kebab(key)].filter(Boolean).join('_').replace(/-/g, '_').toUpperCase();
}

/** How a user sets this option, for messages: `--port (OFFCLOUD_CALCULATOR_PORT)`. */
export function describeKey(component: string, key: string, flagPrefix = ''): string {
  return `--${flagPrefix}${kebab(key)} (${envName(component, key)})`;
}

function fail(component: string, key: string, raw: unknown, allowed: string, flagPrefix: string): never {
  throw new ConfigError(`invalid value ${JSON.stringify(raw)} for ${describeKey(component, key, flagPrefix)}: expected ${allowed}`);
}

/** Converts one raw value (string from flags/env, or a typed value from a file). */
export function coerceOption(component: string, key: string, spec: OptionSpec, raw: unknown, flagPrefix = ''): string | number | boolean | string[] {
  switch (spec.type) {
    case 'string': {
      if (typeof raw !== 'string' && typeof raw !== 'number') fail(component, key, raw, 'a string', flagPrefix);
      const value = String(raw);
      if (spec.choices && !spec.choices.includes(value)) {
        fail(component, key, raw, `one of ${spec.choices.join(', ')}`, flagPrefix);
      }
      return value;
    }
    case 'integer': {
      const min = spec.min ?? Number.MIN_SAFE_INTEGER;
      const max = spec.max ?? Number.MAX_SAFE_INTEGER;
      const text = typeof raw === 'number' ? String(raw) : typeof raw === 'string' ? raw.trim() : '';
      const allowed = `an integer from ${min} to ${max}`;
      if (!/^-?\d+$/.test(text)) fail(component, key, raw, allowed, flagPrefix);
      const value = Number(text);
      if (!Number.isSafeInteger(value) || value < min || value > max) fail(component, key, raw, allowed, flagPrefix);
      return value;
    }
    case 'boolean': {
      if (typeof raw === 'boolean') return raw;
      const text = String(raw).toLowerCase();
      if (['true', '1', 'yes', 'on', ''].includes(text)) return true;
      if (['false', '0', 'no', 'off'].includes(text)) return false;
      return fail(component, key, raw, 'true or false', flagPrefix);
    }
    case 'list': {
      if (Array.isArray(raw) && raw.every((v) => typeof v === 'string')) return raw as string[];
      if (typeof raw === 'string')
        return raw
          .split(',')
          .map((v) => v.trim())
          .filter(Boolean);
      return fail(component, key, raw, 'a comma-separated list', flagPrefix);
    }
  }
}

export interface ConfigSources {
  /** Flag values by option key (already split from argv). */
  flags?: Record<string, string | boolean>;
  env?: NodeJS.ProcessEnv;
  /** The config file's section for this component. */
  file?: Record<string, unknown>;
  /** Prefix the flags carry (`calculator-` under `offcloud up`), for messages. */
  flagPrefix?: string;
}

/** Resolves every option of a schema: flags > env > file > default. */
export function resolveConfig<S extends OptionSchema>(component: string, schema: S, sources: ConfigSources): OptionValues<S> {
  const env = sources.env ?? {};
  const out: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(schema)) {
    const fromFlag = sources.flags?.[key];
    // Common options also read OFFCLOUD_<KEY>, so one variable sets every component's data dir.
    const fromEnv = env[envName(component, key)] ?? (key in commonOptions ? env[envName('', key)] : undefined);
    const fromFile = sources.file?.[key];
    const raw = fromFlag ?? fromEnv ?? fromFile;
    out[key] = raw === undefined ? spec.default : coerceOption(component, key, spec, raw, sources.flagPrefix);
  }
  if (sources.file) {
    for (const key of Object.keys(sources.file)) {
      if (!(key in schema)) throw new ConfigError(`unknown key "${key}" in the config file's "${component}" section`);
    }
  }
  return out as OptionValues<S>;
}

/** Fills the defaults of a schema under the values a caller (test, CLI) gave. */
export function withDefaults<S extends OptionSchema>(schema: S, given: Partial<OptionValues<S>>): OptionValues<S> {
  const out: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(schema)) {
    out[key] = (given as Record<string, unknown>)[key] ?? spec.default;
  }
  return out as OptionValues<S>;
}

/** Reads a JSON or YAML config file: `{ "<component>": { "<key>": value } }`. */
export function readConfigFile(path: string): Record<string, Record<string, unknown>> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config file ${path}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = extname(path) === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new ConfigError(`config file ${path} is not valid ${extname(path) === '.json' ? 'JSON' : 'YAML'}: ${(err as Error).message}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError(`config file ${path} must hold an object of component sections`);
  }
  for (const [section, value] of Object.entries(parsed)) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new ConfigError(`config file ${path}: section "${section}" must be an object`);
    }
  }
  return parsed as Record<string, Record<string, unknown>>;
}
