/**
 * Everything a plugin sees and is (Kong's `schema.lua` + `handler.lua`
 * pair): a config schema, a priority, and an access-phase handler that may
 * change the upstream request, add client response headers, or reject the
 * request by throwing a GatewayError. The proxy and the compile step meet
 * plugins only through these types.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import type { Field, FieldError } from '../config/schema.ts';
import type { BasicauthCredential, Consumer, HmacauthCredential, Credential, JwtSecret, KeyauthCredential, Plugin, Route, Service } from '../config/model.ts';
import { MemoryDictionaries } from './proxy-cache/memory-strategy.ts';
import type { CounterStores } from './rate-limiting/policies.ts';
import { PluginSeries } from './series.ts';

/** What the configuration offers a plugin at request time. */
export interface ConsumerDirectory {
  findCredentialByKey(key: string): KeyauthCredential | undefined;
  findJwtSecret(key: string): JwtSecret | undefined;
  findBasicauthCredential(username: string): BasicauthCredential | undefined;
  findHmacauthCredential(username: string): HmacauthCredential | undefined;
  /** The acl groups a consumer belongs to (empty when none). */
  groupsOf(consumerId: string): readonly string[];
  findConsumer(idOrUsername: string): Consumer | undefined;
}

export interface RequestContext {
  requestId: string;
  /** The request's method; a plugin may change the one sent upstream (request-transformer's http_method). */
  method: string;
  scheme: 'http' | 'https';
  /** The normalized request path (what routes match against). */
  path: string;
  /** The path sent upstream instead of the one the route computes (request-transformer's replace.uri), or null. */
  upstreamPath: string | null;
  /** Path and query as the service got them, once the request was forwarded (null before, or when the gateway answered itself). */
  upstreamUri: string | null;
  /** The request target as the client sent it (path and query, unnormalized). */
  requestTarget(): string;
  /** The gateway port the client connected to. */
  serverPort(): number;
  /** The request's HTTP version (`1.1`, `1.0`). */
  httpVersion(): string;
  /** The raw query string without `?`; plugins that change it write it back. */
  query: string;
  /** The client's headers as received (lower-case names). */
  clientHeaders: IncomingHttpHeaders;
  /** Every value of one header (lower-case name), repeated ones kept apart (for "Duplicate API key found"). */
  headerValues(name: string): string[];
  /** Headers sent upstream; plugins set or delete entries. */
  upstreamHeaders: Record<string, string | string[]>;
  /** Headers added to the client response, including error responses. */
  responseHeaders: Record<string, string>;
  /** The address limits and logs attribute the request to. */
  forwardedIp: string;
  route: Route;
  service: Service;
  consumer: Consumer | null;
  credential: Credential | null;
  directory: ConsumerDirectory;
  /** The body, once a plugin has read it (it is then sent upstream from this buffer). */
  body: Buffer | null;
  /** Reads the whole request body (once); later readers get the same buffer. */
  readBody(): Promise<Buffer>;
  /** Replaces the body sent upstream (after a plugin edited it). */
  replaceBody(body: Buffer): void;
}

/**
 * Sets an upstream header, or clears it when `value` is null. Only a header
 * that is there is deleted: `delete` turns the object into a dictionary for
 * the rest of the request, and clearing absent headers is the usual case.
 */
export function setOrClearHeader(headers: Record<string, string | string[]>, name: string, value: string | null): void {
  if (value !== null) headers[name] = value;
  else if (headers[name] !== undefined) delete headers[name];
}

export interface PluginHandler {
  /** Kong's access phase: may change the upstream request, or answer by throwing a GatewayError (or a PluginAnswer). */
  access(ctx: RequestContext): void | Promise<void>;
  /**
   * Kong's header_filter phase, for every answer (the service's, or the
   * gateway's own when a later plugin refused the request): `headers` are
   * its name/value pairs as the client will get them, to be edited in place.
   */
  header?(ctx: RequestContext, status: number, headers: string[]): void;
  /**
   * Kong's body_filter phase, given the service's whole answer body (the
   * proxy holds the answer for requests this plugin ran on): returns the
   * body to send. `headers` may still be edited.
   */
  body?(ctx: RequestContext, status: number, headers: string[], body: Buffer): Buffer;
  /** Kong's log phase: once per request, when its answer's head went out (a proxied one or the gateway's own). */
  log?(ctx: RequestContext, entry: AnswerLog): void;
}

/** What the log phase knows of an answer. */
export interface AnswerLog {
  status: number;
  /** Who answered: the service, or the gateway itself (Kong's `source` label: `service` or `kong`). */
  source: 'service' | 'kong';
  /** From the request's arrival to the answer's head, ms. */
  latency: number;
  /** The service's share of it (0 when the gateway answered itself), ms. */
  upstreamLatency: number;
  /** Request bytes received (head and declared body) and answer bytes declared, when known. */
  requestSize: number;
  responseSize: number;
  /** The answer's headers as name/value pairs. */
  headers: readonly string[];
}

/** Shared by every plugin instance of a gateway, across config reloads. */
export interface PluginEnvironment {
  counters: CounterStores;
  logger: Logger;
  /** This process's counters under other products' metric names (prometheus's kong_*). */
  series: PluginSeries;
  /** This process's share of Kong's shared memory dictionaries (proxy-cache's memory strategy). */
  dictionaries: MemoryDictionaries;
  /** ms since the epoch: Date.now, or a test's own clock. */
  clock: () => number;
}

export function pluginEnvironment(logger: Logger, counters: CounterStores, clock: () => number = Date.now): PluginEnvironment {
  return { counters, logger, series: new PluginSeries(), dictionaries: new MemoryDictionaries(), clock };
}

export interface PluginDefinition {
  name: string;
  /** Kong's PRIORITY: higher runs first (key-auth 1250 before rate-limiting 910). */
  priority: number;
  configFields: Record<string, Field>;
  /** Rewrites deprecated spellings into the current fields before they are checked. */
  expandShorthands?(config: Record<string, unknown>): Record<string, unknown>;
  /** Whole-config checks after the fields passed (limits in order, required pairs). */
  checkConfig?(config: Record<string, unknown>, path: string, errors: FieldError[]): void;
  /** Kong's `no_consumer`: the plugin cannot be scoped to a consumer. */
  noConsumer?: boolean;
  create(config: Record<string, unknown>, env: PluginEnvironment, entity: { id: string }): PluginHandler;
}

/**
 * A plugin's definition from what Kong declares of it (name, priority,
 * schema) and a `create` that gets its config already typed: the schema
 * checked every field and filled Kong's defaults before `create` runs.
 */
export function definePlugin<Config>(
  about: Omit<PluginDefinition, 'create'>,
  create: (conf: Config, env: PluginEnvironment, entity: { id: string }) => PluginHandler,
): PluginDefinition {
  return { ...about, create: (config, env, entity) => create(config as unknown as Config, env, entity) };
}

/** A plugin entity with its behaviour, ready to run. */
export interface PluginInstance {
  entity: Plugin;
  priority: number;
  handler: PluginHandler;
}

/**
 * One plugin name in a route's chain: the instances that may apply, most
 * specific scope first. The one that runs is the first whose consumer
 * scope fits the consumer known when its turn comes (auth runs first).
 */
export interface PluginSlot {
  name: string;
  priority: number;
  candidates: PluginInstance[];
}

/** The instance of a plugin that applies: the consumer-scoped one for this consumer, else the first without a consumer. */
export function pluginFor(slot: PluginSlot, consumer: Consumer | null): PluginInstance | undefined {
  for (const candidate of slot.candidates) {
    const scoped = candidate.entity.consumer;
    if (!scoped || scoped.id === consumer?.id) return candidate;
  }
  return undefined;
}
