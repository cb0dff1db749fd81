/**
 * The billing endpoint (the "cloud resource" side of the containers'
 * contract): POST /billing/v1/validate and POST /billing/v1/usage, keyed by
 * the container's ApiKey in Ocp-Apim-Subscription-Key; and GET
 * /billing/v1/usage, the recorded counts per resource over time.
 */
import { join } from 'node:path';
import { readFile } from 'node:fs/promises';
import { withDefaults, type OptionValues, type RuntimeExtras } from '../common/config.ts';
import type { RunningComponent } from '../common/component.ts';
import { removeStaleTemporaries, writeFileAtomic } from '../common/files.ts';
import { createHttpServer, installErrorHandler, listen, sendWireAnswer } from '../common/http.ts';
import { createLogger } from '../common/log.ts';
import { API_KEY_HEADER, API_STATUS_MESSAGES, BILLING_PATHS, CONTAINER_KIND_NAMES, type ContainerKind } from '../cognitive/protocol.ts';
import { toWireError } from './errors.ts';
import { acceptUsageReport, authorizeContainer, parseIdentity, usageOverTime } from './metering.ts';
import { billingOptions } from './options.ts';
import { BillingStore } from './store.ts';

export type BillingOptions = OptionValues<typeof billingOptions>;

/** Keys of the demo resources, kept in the data dir so restarts reuse them. */
async function ensureDemoResources(store: BillingStore): Promise<Record<ContainerKind, string>> {
  const path = join(store.dir, 'demo-keys.json');
  await removeStaleTemporaries(path);
  const known = await readFile(path, 'utf8').then(
    (text) => JSON.parse(text) as Partial<Record<ContainerKind, string>>,
    () => ({}) as Partial<Record<ContainerKind, string>>,
  );
  const keys = {} as Record<ContainerKind, string>;
  let changed = false;
  for (const kind of CONTAINER_KIND_NAMES) {
    const existing = known[kind];
    if (existing && store.resources.some((r) => r.kind === kind && r.name === `demo-${kind}`)) {
      keys[kind] = existing;
      continue;
    }
    keys[kind] = (await store.createResource({ kind, name: `demo-${kind}` })).key;
    changed = true;
  }
  if (changed) await writeFileAtomic(path, JSON.stringify(keys, null, 2) + '\n', 0o600);
  return keys;
}

export async function startBilling(given: Partial<BillingOptions> & RuntimeExtras = {}): Promise<RunningComponent> {
  const options = withDefaults(billingOptions, given);
  const logger = given.logger ?? createLogger(options.logLevel, 'billing');
  const store = await BillingStore.open(options.dataDir);
  const demoKeys = options.demoResources ? await ensureDemoResources(store) : null;
  // A URL fastify cannot decode is a malformed call in billing's own error shape too.
  const app = createHttpServer({ logger, bodyLimit: 64 * 1024, frameworkErrors: (error, _request, reply) => void sendWireAnswer(reply, toWireError(error)) });
  const keyOf = (headers: Record<string, string | string[] | undefined>) => {
    const value = headers[API_KEY_HEADER];
    return typeof value === 'string' ? value : undefined;
  };

  app.post(BILLING_PATHS.validate, async (request) => {
    const resource = await authorizeContainer(store, keyOf(request.headers), parseIdentity(request.body));
    store.checkQuota(resource);
    return { apiStatus: 'Valid', apiStatusMessage: API_STATUS_MESSAGES.Valid };
  });
  app.post(BILLING_PATHS.usage, async (request) => {
    await acceptUsageReport(store, keyOf(request.headers), request.body);
    return { apiStatus: 'Valid', apiStatusMessage: API_STATUS_MESSAGES.Valid };
  });
  // Ours (the real service has no such call): what `offcloud billing usage --format json` prints, over HTTP, for the console.
  app.get(BILLING_PATHS.usage, async (request) => usageOverTime(store, request.query));
  app.setNotFoundHandler(async (request, reply) =>
    reply.code(404).send({ error: { code: 'NotFound', message: `no billing operation at ${request.method} ${request.url.split('?')[0]}` } }),
  );
  installErrorHandler(app, { logger, toWire: toWireError });

  const url = await listen(app, { host: options.host, port: options.port, component: 'billing' });
  logger.info({ url }, 'billing endpoint listening');
  return {
    urls: [{ label: 'billing endpoint (Billing=)', url }],
    facts: { billing: { billingUrl: url, ...(demoKeys && { demoApiKeys: { ...demoKeys } }) } },
    details: demoKeys ? CONTAINER_KIND_NAMES.map((kind) => ({ label: `ApiKey for ${kind}`, value: demoKeys[kind] })) : [],
    close: () => app.close(),
  };
}
