/**
 * The cognitive containers' contract (spec §4.12, §5), shared by sentiment and
 * face: start-up parameters, the billing connection and the common HTTP
 * surface. docs/cognitive.md shows how a container uses it.
 */
import type { Logger } from 'pino';
import type { OptionValues } from '../common/config.ts';
import { BillingConnection } from './billing-connection.ts';
import { validateContainerStart, type containerOptions } from './startup.ts';
import type { ContainerKind } from './protocol.ts';

export { containerOptions, containerWireUp, validateContainerStart } from './startup.ts';
export { BillingConnection, type BillingRefusal } from './billing-connection.ts';
export { billingGate, defaultRefusalBody, openApiDocument, registerContainerSurface, OPENAPI_PATH, type OpenApiPaths } from './surface.ts';
export { API_STATUSES, CONTAINER_KINDS, type ApiStatus, type ContainerKind } from './protocol.ts';

export interface OpenBillingOptions {
  /** The component's name, for start-up messages. */
  component: string;
  kind: ContainerKind;
  containerVersion: string;
  options: OptionValues<typeof containerOptions>;
  logger: Logger;
  env?: NodeJS.ProcessEnv;
}

/**
 * Validates Eula/Billing/ApiKey (throws a StartupError naming the missing
 * one), validates the key at the billing endpoint and starts the usage
 * reports. An unreachable billing endpoint does not stop the start: the
 * container runs and refuses scoring until billing answers (status
 * CouldNotConnect).
 */
export async function openBillingConnection(open: OpenBillingOptions): Promise<BillingConnection> {
  const start = validateContainerStart(open.component, open.options, open.env);
  const connection = new BillingConnection({
    kind: open.kind,
    containerVersion: open.containerVersion,
    billingUrl: start.billingUrl,
    apiKey: start.apiKey,
    intervalMs: open.options.meteringIntervalMs,
    maxFailures: open.options.maxBillingFailures,
    logger: open.logger,
  });
  await connection.start();
  return connection;
}
