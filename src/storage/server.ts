/**
 * The blob endpoint: plain HTTP on 10000 for Shared Key and SAS (where every storage
 * SDK looks for the development account, `UseDevelopmentStorage=true`), and HTTPS
 * (local CA) on 10443 for bearer tokens too, which the service refuses over HTTP.
 * Path-style URLs (/<account>/<container>/<blob>) and host-style
 * (<account>.blob.<suffix>/<container>/<blob>); every request is authenticated
 * (bearer token or Shared Key), authorized, then dispatched by method and `comp`.
 */
import type { Counter } from 'prom-client';
import { ComponentMetrics } from '../common/metrics.ts';
import { resolve } from 'node:path';
import type { FastifyInstance, FastifyRequest, FastifyServerOptions } from 'fastify';
import { withDefaults, type OptionValues, type RuntimeExtras } from '../common/config.ts';
import type { RunningComponent } from '../common/component.ts';
import type { StorageFacts } from '../common/facts.ts';
import { createHttpServer, installErrorHandler, listenEach, sendWireAnswer } from '../common/http.ts';
import { createLogger, type Logger } from '../common/log.ts';
import { resolveTls } from '../common/tls.ts';
import type { IssuerStyle } from '../identity/public.ts';
import { canonicalQuery, StorageAuthenticator, type Principal } from './authentication/index.ts';
import { NEWEST_VERSION, resolveServiceVersion } from './authentication/versions.ts';
import { assignRequestId, errors, toWireError } from './errors.ts';
import { storageOptions } from './options.ts';
import { AccountStore } from './persistence/store.ts';
import { DEVELOPMENT_KEY, loadAccounts, type StorageAccount } from './persistence/accounts.ts';
import { serviceOperation } from './handlers/service.ts';
import { containerOperation } from './handlers/container.ts';
import { blobOperation } from './handlers/blob.ts';
import { parseCorsRules, preflight, responseCorsHeaders } from './handlers/cors.ts';
import { ServicePropertiesStore } from './persistence/service-properties.ts';
import { readFile } from 'node:fs/promises';
import { Agent } from 'undici';
import type { Operation, StorageLimits, Subrequest, SubrequestAnswer } from './handlers/context.ts';

export type StorageOptions = OptionValues<typeof storageOptions>;

interface Target {
  account: string;
  container: string | undefined;
  blob: string | undefined;
  endpoint: string;
  rawPath: string;
}

function header(headers: FastifyRequest['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * A request without credentials to a container with public access reads as anonymous:
 * `blob` lets anyone read blobs, `container` also list them and read the container.
 */
function anonymousAccess(headers: FastifyRequest['headers'], query: URLSearchParams, store: AccountStore, target: Target): Principal | undefined {
  if (headers.authorization !== undefined || query.has('sig') || target.container === undefined) return undefined;
  let access;
  try {
    access = store.getContainer(target.container).publicAccess;
  } catch {
    return undefined;
  }
  if (access === 'container') return { scheme: 'Anonymous', permissions: 'rl' };
  if (access === 'blob' && target.blob !== undefined) return { scheme: 'Anonymous', permissions: 'r' };
  return undefined;
}

/** A `.` or `..` path segment, its dots percent-encoded or not, as URL parsers read it. */
const DOT_SEGMENT = /^(?:\.|%2e)$/i;
const DOUBLE_DOT_SEGMENT = /^(?:\.|%2e){2}$/i;

/**
 * Resolves the `.` and `..` segments of a raw path (RFC 3986 §5.2.4, with `%2E` read as a
 * dot, as the WHATWG URL parser does): what every SDK sends, and what the service's front
 * end turns a raw `/c/../../x` into before it names a resource or checks a signature. A
 * `..` never climbs above the root, so `/<account>/<c>/../../x` names account `x`.
 */
function removeDotSegments(rawPath: string): string {
  const kept: string[] = [];
  const segments = rawPath.split('/').slice(1);
  segments.forEach((segment, i) => {
    const dots = DOUBLE_DOT_SEGMENT.test(segment) ? 2 : DOT_SEGMENT.test(segment) ? 1 : 0;
    if (dots === 2) kept.pop();
    if (dots === 0) kept.push(segment);
    // A path that ends in a dot segment names the folder it resolved to: `/a/b/..` is `/a/`.
    else if (i === segments.length - 1) kept.push('');
  });
  return `/${kept.join('/')}`;
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw errors.invalidUri();
  }
}

/**
 * Account, container and blob of a request, from the Host header (host style) or the path.
 * A Shared Key signature covers the path but not the Host, so one signed path is one
 * resource however it is sent: host style, a path that starts with the host's own account
 * name (`/<account>/<container>/…`, a path-style request sent with another Host) is
 * refused rather than read as a container of that name.
 */
function resolveTarget(request: FastifyRequest, scheme: string): Target {
  const url = request.raw.url ?? '/';
  const rawPath = removeDotSegments(url.split('?')[0] ?? '/');
  const host = request.headers.host ?? '';
  const labels = host.split(':')[0]!.split('.');
  const segments = rawPath.split('/').slice(1);
  let account: string;
  let endpoint: string;
  if (labels.length > 2 && labels[1] === 'blob') {
    account = labels[0]!;
    endpoint = `${scheme}://${host}/`;
    if (segments[0] !== undefined && decode(segments[0]) === account) throw errors.invalidUri();
  } else {
    account = decode(segments.shift() ?? '');
    endpoint = `${scheme}://${host}/${account}`;
  }
  const container = segments.length && segments[0] !== '' ? decode(segments[0]!) : undefined;
  const blobPath = segments.slice(1).join('/');
  return { account, container, blob: blobPath ? decode(blobPath) : undefined, endpoint, rawPath };
}

/** Headers of a sub-request's answer that belong to its connection, not to it. */
const CONNECTION_HEADERS = new Set(['connection', 'keep-alive', 'date', 'content-length', 'transfer-encoding']);

/** A Blob Batch sub-request, run through this app as if it came alone over the batch's connection. */
async function runSubrequest(app: FastifyInstance, sub: Subrequest, batch: FastifyRequest): Promise<SubrequestAnswer> {
  const answer = await app.inject({
    method: sub.method as 'DELETE' | 'PUT',
    url: sub.url,
    headers: { ...sub.headers, host: batch.headers.host ?? '', 'content-length': '0' },
    remoteAddress: batch.ip,
  });
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(answer.headers)) {
    if (!CONNECTION_HEADERS.has(name) && value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return { status: answer.statusCode, statusText: answer.statusMessage, headers, body: answer.body };
}

/** Where `UseDevelopmentStorage=true` sends requests, in every storage SDK. */
const DEVELOPMENT_ENDPOINT = 'http://127.0.0.1:10000/devstoreaccount1';
const SECONDARY_SUFFIX = '-secondary';

interface StorageServerContext {
  logger: Logger;
  accounts: Map<string, StorageAccount>;
  stores: Map<string, AccountStore>;
  serviceProperties: Map<string, ServicePropertiesStore>;
  /** The HTTP client copies fetch their sources with (trusts the local CA). */
  sourceDispatcher: Agent;
  authenticator: StorageAuthenticator;
  limits: StorageLimits;
  blobsWritten: Counter;
  /** Versions newer than NEWEST_VERSION already logged (each is logged once). */
  newerVersionsSeen: Set<string>;
}

function registerRoutes(app: FastifyInstance, ctx: StorageServerContext, secure: boolean): void {
  // Bodies are streamed to disk by the handlers, never buffered by fastify.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));

  app.addHook('onRequest', async (request, reply) => {
    // The handler replaces it with the version the request is served as.
    reply.header('x-ms-request-id', assignRequestId(request)).header('x-ms-version', NEWEST_VERSION).header('server', 'offcloud-storage');
    const clientRequestId = request.headers['x-ms-client-request-id'];
    if (typeof clientRequestId === 'string' && clientRequestId.length <= 1024) reply.header('x-ms-client-request-id', clientRequestId);
  });

  installErrorHandler(app, { logger: ctx.logger, toWire: toWireError });
  app.setNotFoundHandler(async () => {
    throw errors.invalidUri();
  });

  app.route({
    method: ['GET', 'HEAD', 'PUT', 'DELETE', 'POST', 'PATCH', 'OPTIONS'],
    url: '/*',
    exposeHeadRoute: false,
    handler: async (request, reply) => {
      const target = resolveTarget(request, secure ? 'https' : 'http');
      // The secondary endpoint of read-access geo-redundant storage names `<account>-secondary`; here both are one copy of the data.
      const secondary = !ctx.accounts.has(target.account) && target.account.endsWith(SECONDARY_SUFFIX);
      if (secondary) target.account = target.account.slice(0, -SECONDARY_SUFFIX.length);
      const account = ctx.accounts.get(target.account);
      const store = ctx.stores.get(target.account);
      const serviceProperties = ctx.serviceProperties.get(target.account);
      if (!account || !store || !serviceProperties) throw errors.accountNotFound();
      const cors = serviceProperties.current.cors;
      const origin = request.headers.origin;
      if (request.method === 'OPTIONS') {
        reply.headers(
          preflight(cors, origin, header(request.headers, 'access-control-request-method'), header(request.headers, 'access-control-request-headers')),
        );
        return reply.code(200).send();
      }
      reply.headers(responseCorsHeaders(cors, origin, request.method));
      const query = canonicalQuery(new URLSearchParams((request.raw.url ?? '').split('?')[1] ?? ''));
      const requested = request.headers['x-ms-version'];
      const version = resolveServiceVersion(Array.isArray(requested) ? requested[0] : requested);
      reply.header('x-ms-version', version.effective);
      if (version.newerThanKnown && !ctx.newerVersionsSeen.has(version.requested!)) {
        ctx.newerVersionsSeen.add(version.requested!);
        ctx.logger.info({ requested: version.requested, servedAs: NEWEST_VERSION }, 'x-ms-version newer than this server knows: served as the newest it knows');
      }
      const principal: Principal =
        anonymousAccess(request.headers, query, store, target) ??
        (await ctx.authenticator.authenticate({
          method: request.method,
          rawPath: target.rawPath,
          query,
          headers: request.headers,
          version,
          secure,
          ip: request.ip,
          account,
          container: target.container,
          blob: target.blob,
          accessPolicy: (id) => (target.container === undefined ? undefined : store.findContainer(target.container)?.accessPolicies?.find((p) => p.id === id)),
        }));
      const scope = `/storage/${account.name}${target.container ? `/${target.container}` : ''}`;
      const op: Operation = {
        request,
        reply,
        account,
        store,
        container: target.container,
        blob: target.blob,
        query,
        endpoint: target.endpoint,
        secondary,
        limits: ctx.limits,
        responseHeaderOverrides: principal.scheme === 'SAS' ? principal.responseHeaders : {},
        blobWritten: () => ctx.blobsWritten.inc(),
        authorize: (action) => ctx.authenticator.authorize(principal, action, scope),
        mayReadLocally: async (container) => {
          if (principal.scheme !== 'SharedKey' && principal.scheme !== 'Bearer') return false;
          await ctx.authenticator.authorize(principal, 'read', `/storage/${account.name}/${container}`);
          return true;
        },
        sourceDispatcher: ctx.sourceDispatcher,
        serviceProperties,
        serviceVersion: version.effective,
        runSubrequest: (sub) => runSubrequest(app, sub, request),
        ...(principal.scheme === 'Bearer' ? { tokenIdentity: { objectId: principal.principalId, tenantId: principal.tenantId } } : {}),
      };
      if (secondary && request.method !== 'GET' && request.method !== 'HEAD') throw errors.writeOnSecondary();
      if (!target.container) return serviceOperation(op);
      if (!target.blob) return containerOperation(op, target.container);
      return blobOperation(op, target.container, target.blob);
    },
  });
}

/** `clock`: the time leases, snapshots and modification times read (tests move it instead of sleeping). */
export async function startStorage(given: Partial<StorageOptions> & RuntimeExtras & { clock?: () => number } = {}): Promise<RunningComponent> {
  const options = withDefaults(storageOptions, given);
  const logger = given.logger ?? createLogger(options.logLevel, 'storage');
  const authenticator = new StorageAuthenticator({
    dataDir: options.dataDir,
    directoryFile: options.directory || undefined,
    jwksUri: options.jwksUri || undefined,
    issuerStyle: options.issuerStyle as IssuerStyle,
    authorityHost: options.authorityHost.replace(/\/+$/, ''),
  });
  await authenticator.ensure();
  const accountList = await loadAccounts(options.dataDir, options.account);
  const stores = new Map<string, AccountStore>();
  const serviceProperties = new Map<string, ServicePropertiesStore>();
  for (const account of accountList) {
    const root = resolve(options.dataDir, 'storage', 'accounts', account.name);
    stores.set(account.name, await AccountStore.open(root, { compactIndexAfter: options.compactIndexAfter, ...(given.clock ? { clock: given.clock } : {}) }));
    serviceProperties.set(account.name, await ServicePropertiesStore.open(root, parseCorsRules));
  }
  const tls = await resolveTls(options);
  // One registry for both endpoints: /metrics on either shows the whole component.
  const metrics = new ComponentMetrics('storage');
  const ctx: StorageServerContext = {
    logger,
    blobsWritten: metrics.counter('storage_blobs_written_total', 'blobs written by Put Blob or Put Block List'),
    accounts: new Map(accountList.map((a) => [a.name, a])),
    stores,
    serviceProperties,
    sourceDispatcher: new Agent({ connect: tls.caCertPath ? { ca: await readFile(tls.caCertPath, 'utf8') } : {} }),
    authenticator,
    newerVersionsSeen: new Set(),
    limits: { maxBlobBytes: options.maxBlobSize, maxBlockBytes: options.maxBlockSize },
  };
  // A URL fastify cannot decode (`/devstoreaccount1/c/%zz`) is refused before routing: answer it as the service does.
  const frameworkErrors: FastifyServerOptions['frameworkErrors'] = (_error, request, reply) =>
    void sendWireAnswer(reply, toWireError(errors.invalidUri(), request));
  const http = createHttpServer({ logger, frameworkErrors, metrics });
  registerRoutes(http, ctx, false);
  const https = createHttpServer({ logger, tls, frameworkErrors, metrics });
  registerRoutes(https, ctx, true);
  const [httpUrl, httpsUrl] = (await listenEach([
    [http, { host: options.host, port: options.port, component: 'storage' }],
    [https, { host: options.host, port: options.httpsPort, component: 'storage', portKey: 'httpsPort' }],
  ])) as [string, string];
  const main = ctx.accounts.get(options.account)!;
  const httpEndpoint = `${httpUrl}/${main.name}`;
  const blobEndpoint = `${httpsUrl}/${main.name}`;
  logger.info({ httpUrl, httpsUrl, account: main.name }, 'storage listening');
  const facts: StorageFacts = {
    accountName: main.name,
    accountKey: main.keys[0]!,
    blobEndpoint,
    httpBlobEndpoint: httpEndpoint,
    connectionString: `DefaultEndpointsProtocol=https;AccountName=${main.name};AccountKey=${main.keys[0]};BlobEndpoint=${blobEndpoint};`,
    httpConnectionString: `DefaultEndpointsProtocol=http;AccountName=${main.name};AccountKey=${main.keys[0]};BlobEndpoint=${httpEndpoint};`,
    tokenScope: 'https://storage.azure.com/.default',
  };
  return {
    urls: [
      // HTTPS first: the §4.10 endpoint, where tokens work.
      { label: 'blob endpoint (HTTPS: bearer tokens, Shared Key, SAS)', url: blobEndpoint },
      { label: 'blob endpoint (HTTP: Shared Key, SAS)', url: httpEndpoint },
    ],
    facts: { storage: facts },
    details: [
      { label: 'account', value: facts.accountName },
      { label: 'token scope (bearer tokens need the HTTPS endpoint)', value: facts.tokenScope },
      { label: 'connection string', value: facts.connectionString },
      {
        label: 'over plain HTTP',
        value: httpEndpoint === DEVELOPMENT_ENDPOINT && facts.accountKey === DEVELOPMENT_KEY ? 'UseDevelopmentStorage=true' : facts.httpConnectionString,
      },
    ],
    caCertPath: tls.caCertPath,
    close: async () => {
      await Promise.all([https.close(), http.close()]);
      if (!ctx.sourceDispatcher.closed) await ctx.sourceDispatcher.close();
    },
  };
}
