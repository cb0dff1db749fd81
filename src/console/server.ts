/**
 * The console: one page (preact + htm, served from memory) and the /api calls
 * it makes. The API is thin: each call goes to one component's public
 * interface (forwarded as is, or through the storage SDK, gRPC, JWKS) and
 * the component's answer — its errors included — comes back unchanged.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { withDefaults, type OptionValues, type RuntimeExtras } from '../common/config.ts';
import type { RunningComponent } from '../common/component.ts';
import { createHttpServer, installErrorHandler, listen } from '../common/http.ts';
import { createLogger } from '../common/log.ts';
import { resolveModelFile } from '../common/models.ts';
import { ConsoleAccess, SESSION_COOKIE } from './access.ts';
import { loadAssets } from './assets.ts';
import { BlobBrowser, blobName, openBlobService } from './blobs.ts';
import { LoginRequiredError, NotConfiguredError, toWireError } from './errors.ts';
import { hubServiceToken } from './hub-token.ts';
import { componentEntries, probeComponent, probeTargets } from './overview.ts';
import { consoleOptions } from './options.ts';
import { createDispatcher, forward, type Upstream } from './upstream.ts';
import { registerIdentityRoutes } from './identity.ts';
import { registerDeviceRoutes } from './devices.ts';

export type ConsoleOptions = OptionValues<typeof consoleOptions>;

/** Largest body the page sends on: a photo, a blob. */
const BODY_LIMIT = 32 * 1024 * 1024;

function required(value: string, what: string, option: string): string {
  if (!value) throw new NotConfiguredError(what, option);
  return value;
}

/** The /api/<name>/* calls that go to a component as they are. */
function forwardedUpstreams(options: ConsoleOptions): Record<string, () => Upstream> {
  const scriptsAuth = options.scriptsUser ? { authorization: `Basic ${Buffer.from(options.scriptsUser).toString('base64')}` } : undefined;
  return {
    hub: () => {
      const token = hubServiceToken(required(options.hubConnectionString, "the hub's service connection string", 'hub-connection-string'));
      return { what: 'the hub', base: required(options.hubUrl, "the hub's REST URL", 'hub-url'), headers: () => ({ authorization: token() }) };
    },
    gateway: () => ({
      what: "the gateway's admin API",
      base: required(options.gatewayAdminUrl, "the gateway's admin URL", 'gateway-admin-url'),
      methods: ['GET'],
    }),
    scripts: () => ({
      what: 'the scripts server',
      base: required(options.scriptsUrl, "the scripts server's URL", 'scripts-url'),
      ...(scriptsAuth ? { headers: () => scriptsAuth } : {}),
    }),
    sentiment: () => ({
      what: 'the sentiment container',
      base: required(options.sentimentUrl, "the sentiment container's URL", 'sentiment-url'),
      methods: ['GET', 'POST'],
    }),
    face: () => ({ what: 'the face container', base: required(options.faceUrl, "the face container's URL", 'face-url'), methods: ['GET', 'POST'] }),
    billing: () => ({ what: 'billing', base: required(options.billingUrl, "billing's URL", 'billing-url'), methods: ['GET'] }),
    devdata: () => ({ what: 'the device data service', base: required(options.devdataUrl, "the device data service's URL", 'devdata-url'), methods: ['GET'] }),
    scoring: () => ({
      what: 'the scoring front end',
      base: required(options.scoringUrl, "a scoring service's URL", 'scoring-url'),
      methods: ['POST'],
      headers: () => ({ authorization: `Bearer ${options.scoringKey}` }),
    }),
  };
}

function registerApi(app: FastifyInstance, options: ConsoleOptions, caFile: string): void {
  const dispatcher = createDispatcher(caFile);
  app.addHook('onClose', () => dispatcher.close());

  app.get('/api/overview', async () => {
    const components = await Promise.all(componentEntries(options).map((c) => probeComponent(dispatcher, c, probeTargets(options))));
    return {
      components,
      caFile: caFile || null,
      settings: {
        hubDeviceConnectionString: options.hubDeviceConnectionString,
        storageConnectionString: options.storageConnectionString,
        identityUrl: options.identityUrl,
        identityTenant: options.identityTenant,
        gatewayProxyUrl: options.gatewayProxyUrl,
        scriptsUrl: options.scriptsUrl,
      },
    };
  });
  app.get('/api/scoring/labels', async (_request, reply) => {
    let path: string;
    try {
      path = resolveModelFile({
        relativePath: 'imagenet-labels/imagenet_class_index.json',
        explicit: options.imagenetLabels,
        dataDir: options.dataDir,
        option: { component: 'console', flag: 'imagenet-labels' },
      });
    } catch {
      throw new NotConfiguredError('the ImageNet class index', 'imagenet-labels');
    }
    return reply.type('application/json').send(await readFile(path));
  });
  app.get('/api/ca.crt', async (_request, reply) => {
    const pem = await readFile(required(caFile, 'a CA file', 'ca-file'));
    return reply.type('application/x-pem-file').header('content-disposition', 'attachment; filename="offcloud-ca.crt"').send(pem);
  });

  // Bodies reach the components byte for byte: no parsing on the way.
  app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: BODY_LIMIT }, (_request, body, done) => done(null, body));
    for (const [name, upstream] of Object.entries(forwardedUpstreams(options))) {
      // The path after /api/<name>/ as sent (the router matched `/%61pi/hub/…` too), still encoded for resolveUnder's check.
      scope.all(`/api/${name}/*`, async (request, reply) =>
        forward(dispatcher, upstream(), request, reply, request.url.split('?')[0]!.split('/').slice(3).join('/')),
      );
    }
    registerBlobRoutes(scope, options, caFile);
  });
  registerIdentityRoutes(app, options, dispatcher);
  registerDeviceRoutes(app, options);
}

function registerBlobRoutes(app: FastifyInstance, options: ConsoleOptions, caFile: string): void {
  let browser: BlobBrowser | undefined;
  const blobs = () =>
    (browser ??= new BlobBrowser(
      openBlobService(required(options.storageConnectionString, 'a storage connection string', 'storage-connection-string'), caFile),
    ));
  type Container = { Params: { container: string } };
  type Listing = { Params: { container: string }; Querystring: { prefix?: string; marker?: string } };
  // A blob is named in the query: a name's `.` and `..` segments would not survive in a URL path.
  type Blob = { Params: { container: string }; Querystring: { name?: string } };
  app.get('/api/storage/containers', async () => blobs().listContainers());
  app.put<Container>('/api/storage/containers/:container', async (request, reply) => {
    await blobs().createContainer(request.params.container);
    return reply.code(201).send({ name: request.params.container });
  });
  app.delete<Container>('/api/storage/containers/:container', async (request, reply) => {
    await blobs().deleteContainer(request.params.container);
    return reply.code(204).send();
  });
  app.get<Listing>('/api/storage/containers/:container/blobs', async (request) =>
    blobs().listBlobs(request.params.container, String(request.query.prefix ?? ''), request.query.marker ? String(request.query.marker) : undefined),
  );
  app.put<Blob>('/api/storage/containers/:container/blob', async (request, reply) => {
    const name = blobName(request.query.name);
    const data = (request.body as Buffer | undefined) ?? Buffer.alloc(0);
    await blobs().upload(request.params.container, name, data, request.headers['content-type'] ?? 'application/octet-stream');
    return reply.code(201).send({ name, size: data.length });
  });
  app.get<Blob>('/api/storage/containers/:container/blob', async (request, reply) => {
    const name = blobName(request.query.name);
    const blob = await blobs().download(request.params.container, name);
    const file = name.split('/').pop() || 'blob';
    return reply
      .type(blob.contentType)
      .header('content-length', blob.contentLength)
      .header('content-disposition', `attachment; filename*=UTF-8''${encodeURIComponent(file)}`)
      .send(blob.body);
  });
  app.delete<Blob>('/api/storage/containers/:container/blob', async (request, reply) => {
    await blobs().delete(request.params.container, blobName(request.query.name));
    return reply.code(204).send();
  });
  app.get<Blob>('/api/storage/containers/:container/properties', async (request) => blobs().properties(request.params.container, blobName(request.query.name)));
}

function registerPage(app: FastifyInstance, access: ConsoleAccess): void {
  const assets = loadAssets();
  const send = (name: string, request: FastifyRequest, reply: FastifyReply) => {
    const asset = assets.get(name);
    if (!asset) return reply.code(404).send({ error: { code: 'NotFound', message: `no file ${name}` } });
    reply.header('etag', asset.etag).header('cache-control', 'no-cache').header('x-content-type-options', 'nosniff');
    if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
    return reply.type(asset.type).send(asset.body);
  };
  // The page's one inline script is its import map, allowed by its hash.
  const importMap = /<script type="importmap">([\s\S]*?)<\/script>/.exec(assets.get('index.html')!.body.toString('utf8'))![1]!;
  const policy = [
    "default-src 'self'",
    `script-src 'self' 'sha256-${createHash('sha256').update(importMap).digest('base64')}'`,
    "img-src 'self' blob: data:",
    "style-src 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
  app.get('/', async (request, reply) => {
    reply.header('content-security-policy', policy);
    return send('index.html', request, reply);
  });
  app.get<{ Params: { '*': string } }>('/assets/*', async (request, reply) => send(request.params['*'], request, reply));
  app.get('/api/session', async (request) => ({ loginRequired: access.loginToken !== null, loggedIn: access.loggedIn(request) }));
  app.post<{ Body: { token?: unknown } }>('/api/login', async (request, reply) => {
    const session = access.login(request.body?.token);
    if (!session) throw new LoginRequiredError(access.loginToken === null ? 'this console asks for no login' : 'wrong login token');
    return reply.header('set-cookie', `${SESSION_COOKIE}=${session}; HttpOnly; SameSite=Strict; Path=/`).code(204).send();
  });
}

export async function startConsole(given: Partial<ConsoleOptions> & RuntimeExtras = {}): Promise<RunningComponent> {
  const options = withDefaults(consoleOptions, given);
  const logger = given.logger ?? createLogger(options.logLevel, 'console');
  const access = new ConsoleAccess(options.host, options.loginToken);
  // The data dir's local CA is what `offcloud up` and a component started alone with that data dir use.
  const localCa = resolve(options.dataDir, 'ca', 'ca.crt');
  const caFile = options.caFile || (existsSync(localCa) ? localCa : '');
  const app = createHttpServer({ logger, bodyLimit: BODY_LIMIT });
  app.addHook('onRequest', async (request) => access.check(request));
  installErrorHandler(app, { logger, toWire: toWireError });
  app.setNotFoundHandler(async (request, reply) =>
    reply.code(404).send({ error: { code: 'NotFound', message: `no console call at ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}` } }),
  );
  registerPage(app, access);
  registerApi(app, options, caFile);

  const url = await listen(app, { host: options.host, port: options.port, component: 'console' });
  logger.info({ url, login: access.loginToken !== null }, 'console listening');
  return {
    urls: [{ label: 'web console', url: `${url}/` }],
    facts: { console: { url: `${url}/`, ...(access.loginToken !== null && { loginToken: access.loginToken }) } },
    details: access.loginToken ? [{ label: 'login token', value: access.loginToken }] : [],
    close: () => app.close(),
  };
}
