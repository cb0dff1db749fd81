/**
 * The scoring front-end (§4.2, §5): POST /api/v1/service/<service_name>/score
 * with `Authorization: bearer <primary or secondary key>`, forwarded over TCP
 * to the service's scoring container(s) and answered with their response
 * unchanged. TLS is optional (R-SCORE-12).
 */
import type { FastifyRequest } from 'fastify';
import { withDefaults, type OptionValues, type RuntimeExtras } from '../common/config.ts';
import type { RunningComponent } from '../common/component.ts';
import type { ScoringFrontendFacts } from '../common/facts.ts';
import { ConfigError } from '../common/errors.ts';
import { removeStaleTemporaries } from '../common/files.ts';
import { createHttpServer, installErrorHandler, listen } from '../common/http.ts';
import { createLogger, type Logger } from '../common/log.ts';
import { resolveTls } from '../common/tls.ts';
import { acceptRawBodies } from './server.ts';
import { invalidBody, notFound, ScoringError, toWireError, unauthorized } from './errors.ts';
import { checkServiceName, KeyStore, keysFilePath, type KeyType } from './api-keys.ts';
import { frontendOptions } from './options.ts';
import { ReplicaSet } from './replicas.ts';

export type FrontendOptions = OptionValues<typeof frontendOptions>;

/** `name=host:port+host:port` → the service name and its replica origins. */
export function parseServiceSpec(spec: string): { name: string; origins: string[] } {
  const eq = spec.indexOf('=');
  if (eq <= 0) throw new ConfigError(`--services entry ${JSON.stringify(spec)} must be name=host:port[+host:port…]`);
  const name = checkServiceName(spec.slice(0, eq).trim());
  const origins = spec
    .slice(eq + 1)
    .split('+')
    .map((replica) => replica.trim())
    .filter(Boolean)
    .map((replica) => {
      let url: URL;
      try {
        url = new URL(/^[a-z]+:\/\//i.test(replica) ? replica : `http://${replica}`);
      } catch {
        throw new ConfigError(`--services: replica ${JSON.stringify(replica)} of "${name}" is not host:port or a URL`);
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`--services: replica ${replica} must be http(s)`);
      return url.origin;
    });
  if (!origins.length) throw new ConfigError(`--services: service "${name}" has no replica`);
  return { name, origins };
}

/** The key after the word bearer, any case (§5: "the word bearer followed by the … key"). */
export function bearerKey(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (!header) throw unauthorized('missing Authorization header; send Authorization: bearer <primary or secondary key>');
  const match = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  if (!match) throw unauthorized('the Authorization header must be "bearer <key>"');
  return match[1]!;
}

function keyType(body: unknown): KeyType {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.isBuffer(body) ? body.toString('utf8') : '');
  } catch {
    throw invalidBody('the body must be JSON {"keyType": "Primary" | "Secondary"}');
  }
  const value = (parsed as { keyType?: unknown } | null)?.keyType;
  if (typeof value === 'string' && /^(primary|secondary)$/i.test(value)) return value.toLowerCase() as KeyType;
  throw invalidBody('keyType must be "Primary" or "Secondary"', 'keyType');
}

export async function startScoringFrontend(given: Partial<FrontendOptions> & RuntimeExtras = {}): Promise<RunningComponent> {
  const options = withDefaults(frontendOptions, given);
  const logger: Logger = given.logger ?? createLogger(options.logLevel, 'scoring-frontend');
  const specs = options.services.map(parseServiceSpec);
  if (!specs.length) throw new ConfigError('--services must name at least one service');
  if (new Set(specs.map((s) => s.name)).size !== specs.length) throw new ConfigError('--services names a service twice');
  const useTls = options.tls || Boolean(options.tlsCert || options.tlsKey);
  const tls = useTls ? await resolveTls(options) : null;

  const keys = new KeyStore(keysFilePath(options.dataDir));
  // What a front-end or `offcloud scoring keys regenerate` killed mid-write left beside the keys file.
  await removeStaleTemporaries(keys.path);
  await keys.ensureServices(specs.map((s) => s.name));
  const services = new Map(
    specs.map((s) => [s.name, new ReplicaSet(s.name, s.origins, { healthIntervalMs: options.healthIntervalMs, timeoutMs: options.timeoutMs, logger })]),
  );
  await Promise.all([...services.values()].map((set) => set.startHealthChecks()));

  const app = createHttpServer({ logger, tls, bodyLimit: options.maxBodyBytes, ready: () => [...services.values()].some((s) => s.healthyCount > 0) });
  acceptRawBodies(app, options.maxBodyBytes);
  const service = (name: string): ReplicaSet => {
    const found = services.get(name);
    if (!found) throw notFound(`no service "${name}"; this front-end serves ${[...services.keys()].join(', ')}`);
    return found;
  };
  const requireAdmin = async (request: FastifyRequest) => {
    if (!(await keys.isAdminKey(bearerKey(request)))) throw unauthorized('the admin key is wrong');
  };

  app.post<{ Params: { service: string } }>('/api/v1/service/:service/score', async (request, reply) => {
    const replicas = service(request.params.service);
    if (!(await keys.isServiceKey(replicas.service, bearerKey(request)))) {
      throw unauthorized(`the key is not the primary or secondary key of service "${replicas.service}"`);
    }
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const answer = await replicas.forward('/score', body, request.headers['content-type']);
    if (answer.contentType) reply.type(answer.contentType);
    return reply.code(answer.statusCode).send(answer.body);
  });
  app.route({
    method: ['GET', 'PUT', 'DELETE', 'PATCH'],
    url: '/api/v1/service/:service/score',
    handler: async (_request, reply) => {
      reply.header('allow', 'POST');
      throw new ScoringError(405, 'MethodNotAllowed', 'use POST with {"data": [...]} of shape [1,3,224,224]');
    },
  });
  app.get<{ Params: { service: string } }>('/admin/v1/service/:service/keys', async (request) => {
    await requireAdmin(request);
    return keys.show(service(request.params.service).service);
  });
  app.post<{ Params: { service: string } }>('/admin/v1/service/:service/regenerateKeys', async (request) => {
    await requireAdmin(request);
    const name = service(request.params.service).service;
    return keys.regenerate(name, keyType(request.body));
  });
  app.setNotFoundHandler(async (request) => {
    throw notFound(`no route ${request.method} ${request.url.split('?')[0]}; scoring is POST /api/v1/service/<service_name>/score`);
  });
  installErrorHandler(app, { logger, toWire: (error) => toWireError(error, options.maxBodyBytes) });

  let url: string;
  try {
    url = await listen(app, { host: options.host, port: options.port, component: 'scoring-frontend' });
  } catch (err) {
    await Promise.all([...services.values()].map((s) => s.close()));
    throw err;
  }
  logger.info({ url, services: Object.fromEntries(specs.map((s) => [s.name, s.origins])) }, 'scoring front-end listening');
  const facts: ScoringFrontendFacts = { url, services: {}, adminKey: await keys.adminKey(), keysFile: keys.path };
  for (const { name } of specs) {
    const { primaryKey, secondaryKey } = await keys.show(name);
    facts.services[name] = { scoreUrl: `${url}/api/v1/service/${name}/score`, primaryKey, secondaryKey };
  }
  return {
    urls: specs.map((s) => ({ label: `service ${s.name} → ${s.origins.join(', ')}`, url: `${url}/api/v1/service/${s.name}/score` })),
    facts: { 'scoring-frontend': facts },
    details: [
      ...Object.entries(facts.services).flatMap(([name, service]) => [
        { label: `${name} primary key`, value: service.primaryKey },
        { label: `${name} secondary key`, value: service.secondaryKey },
      ]),
      { label: 'admin key', value: facts.adminKey },
      { label: 'keys file', value: facts.keysFile },
    ],
    caCertPath: tls?.caCertPath ?? null,
    close: async () => {
      await app.close();
      await Promise.all([...services.values()].map((s) => s.close()));
    },
  };
}
