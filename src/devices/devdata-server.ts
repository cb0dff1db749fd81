/**
 * The device data service (§2.5, §4.4.1, §7): GET /data/<device> asks DevSvc
 * (found through the registry) whether the device is active and answers two
 * plain-text lines. It never returns device data, and a failed or missing
 * lookup reads as `false`, never as an error to the caller.
 */
import { withDefaults, type OptionValues, type RuntimeExtras } from '../common/config.ts';
import type { RunningComponent } from '../common/component.ts';
import { createHttpServer, installErrorHandler, listen, sendWireAnswer } from '../common/http.ts';
import { createLogger } from '../common/log.ts';
import { StartupError } from '../common/errors.ts';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import { ComponentMetrics } from '../common/metrics.ts';
import { checkServiceName } from './devsvc-server.ts';
import { InvalidDeviceNameError, TEXT, toWireError } from './errors.ts';
import { deviceNameFromPath } from './names.ts';
import { devdataOptions } from './options.ts';
import { DevSvcPool } from './pool.ts';
import { openRegistry } from './discovery/index.ts';

/** Line 2 of every answer (§2.5): this service has no device data to give. */
export const NO_DATA_SENTENCE = 'No device data is returned by this service.';

export type DevDataOptions = OptionValues<typeof devdataOptions>;

/** The body of GET /data/<device>, byte for byte (§2.5). */
export function deviceDataText(active: boolean): string {
  return `Device active:  ${active}\n${NO_DATA_SENTENCE}\n`;
}

/** §4.4.1: the returned flag, or false when the lookup failed; the failure is logged, not returned. */
export async function reportDeviceActive(
  pool: DevSvcPool,
  name: string,
  logger: Logger,
  lookups: Counter<'outcome'>,
): Promise<{ active: boolean; node?: string }> {
  try {
    const { device, node } = await pool.get(name);
    lookups.inc({ outcome: device.active ? 'active' : 'inactive' });
    return { active: device.active, node: node.id };
  } catch (err) {
    lookups.inc({ outcome: 'failed' });
    logger.warn({ device: name, err: (err as Error).message }, 'device lookup failed; reporting active false');
    return { active: false };
  }
}

export async function startDevData(given: Partial<DevDataOptions> & RuntimeExtras = {}): Promise<RunningComponent> {
  const options = withDefaults(devdataOptions, given);
  const logger = given.logger ?? createLogger(options.logLevel, 'devdata');
  const serviceName = checkServiceName(options.serviceName);
  const registry = await openRegistry(options);
  const watch = await registry.watch(serviceName).catch(async (err: unknown) => {
    await registry.close();
    throw new StartupError(`devdata: cannot watch ${serviceName} in the ${registry.where}: ${(err as Error).message}`);
  });
  const pool = new DevSvcPool(watch, options.deadlineMs, logger);
  const metrics = new ComponentMetrics('devdata');
  const lookups = metrics.counter('devdata_lookups_total', 'device lookups through DevSvc, by outcome', ['outcome']);
  const app = createHttpServer({
    logger,
    metrics,
    bodyLimit: 1024,
    ready: () => watch.nodes().length > 0,
    frameworkErrors: (error, _request, reply) => void sendWireAnswer(reply, toWireError(error)),
  });

  app.route({
    method: 'GET',
    url: '/data/*',
    exposeHeadRoute: false,
    handler: async (request, reply) => {
      const segment = request.url.slice('/data/'.length).split('?')[0] ?? '';
      if (segment.includes('/')) throw new InvalidDeviceNameError('a device name is one path segment');
      const name = deviceNameFromPath(segment);
      const { active, node } = await reportDeviceActive(pool, name, logger, lookups);
      // Which DevSvc replica answered, for operators; not device data.
      if (node) reply.header('x-devsvc-node', node);
      return reply.type(TEXT).send(deviceDataText(active));
    },
  });
  app.route({
    method: ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'],
    url: '/data/*',
    // Answered before the body is read: a large or odd body changes nothing about the method.
    onRequest: async (_request, reply) => reply.code(405).header('allow', 'GET').type(TEXT).send('method not allowed; use GET'),
    handler: async () => undefined,
  });
  app.setNotFoundHandler(async (request, reply) =>
    reply
      .code(404)
      .type(TEXT)
      .send(`not found: ${request.url.split('?')[0]?.slice(0, 200)}`),
  );
  installErrorHandler(app, { logger, toWire: toWireError });

  let url: string;
  try {
    await watch.ready;
    url = await listen(app, { host: options.host, port: options.port, component: 'devdata' });
  } catch (err) {
    await watch.stop();
    await registry.close();
    throw err;
  }
  logger.info({ url, registry: registry.where, service: serviceName }, 'device data service listening');
  return {
    urls: [
      { label: 'REST', url: `${url}/data/{device}` },
      { label: 'registry', url: `${registry.where}: looks up ${serviceName}` },
    ],
    async close() {
      await app.close();
      await watch.stop();
      pool.close();
      await registry.close();
    },
  };
}
