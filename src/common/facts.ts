/**
 * What each component publishes once it runs: the machine values a client or
 * a later component needs (URLs, keys, connection strings, ids), as typed
 * fields. `offcloud up` stores them in <data-dir>/up.json; `offcloud env`, the
 * console's wiring, components' `wireUp`, the Testcontainers package and the
 * tests read these fields, never the table's wording. The table shows them
 * through each component's `details` (src/common/component.ts).
 *
 * Every value is a string (or a record of strings) so that up.json holds it
 * as it is.
 */

export interface IdentityFacts {
  /** The token issuer's origin (HTTPS): `authorityHost` / `AZURE_AUTHORITY_HOST`. */
  authorityHost: string;
  tenantId: string;
  /** The managed-identity endpoint's origin (plain HTTP), IMDS-style. */
  imdsUrl: string;
  /** App Service-style managed identity: `IDENTITY_ENDPOINT` and the `IDENTITY_HEADER` secret it asks for. */
  identityEndpoint: string;
  identityHeader: string;
  jwksUri: string;
  issuerV1: string;
  issuerV2: string;
  /** `cloud` when tokens name login.microsoftonline.com / sts.windows.net, `local` when they name the issuer's own origin. */
  issuerStyle: string;
  /** The directory file (clients, secrets, APIs) components verifying tokens read. */
  directoryPath: string;
  /** The demo client made on first start, while its secret is kept in the data dir. */
  demoClient?: { clientId: string; clientSecret: string; apiScope: string };
}

export interface StorageFacts {
  accountName: string;
  accountKey: string;
  /** HTTPS (bearer tokens, Shared Key, SAS); trust the CA. */
  blobEndpoint: string;
  /** Plain HTTP (Shared Key, SAS). */
  httpBlobEndpoint: string;
  /** For the HTTPS endpoint. */
  connectionString: string;
  /** For the plain HTTP endpoint. */
  httpConnectionString: string;
  tokenScope: string;
}

export interface HubFacts {
  hostName: string;
  mqttUrl: string;
  webSocketUrl: string;
  amqpUrl: string;
  restUrl: string;
  /** The `iothubowner` policy's connection string (the service SDK's `fromConnectionString`). */
  serviceConnectionString: string;
  /** The demo device, when the hub runs with one. */
  demoDevice?: { deviceId: string; primaryKey: string; connectionString: string };
}

export interface GatewayFacts {
  proxyUrl: string;
  proxyTlsUrl: string;
  adminUrl: string;
  /** The consumer of the built-in configuration and its key-auth key (none with a declarative file). */
  demoConsumer?: { username: string; apiKey: string };
}

export interface BillingFacts {
  /** The `Billing=` URL a container takes. */
  billingUrl: string;
  /** The demo resources' keys (`ApiKey=`), by container kind (`sentiment`, `face`). */
  demoApiKeys?: Record<string, string>;
}

export interface ScoringFacts {
  url: string;
  modelPath: string;
}

export interface ScoringFrontendFacts {
  url: string;
  /** Per service: where to POST and its two keys. */
  services: Record<string, { scoreUrl: string; primaryKey: string; secondaryKey: string }>;
  adminKey: string;
  keysFile: string;
}

export interface DevSvcFacts {
  /** How DevSvc registered: `static`, `etcd` or `mdns`. */
  registry: string;
  serviceName: string;
  address: string;
}

export interface ConsoleFacts {
  url: string;
  /** Only on the start that made it: later starts keep its hash alone. */
  loginToken?: string;
}

/** Each component's facts under its own name; a component sets only its own. */
export interface PublishedFacts {
  identity?: IdentityFacts;
  storage?: StorageFacts;
  hub?: HubFacts;
  gateway?: GatewayFacts;
  billing?: BillingFacts;
  scoring?: ScoringFacts;
  'scoring-frontend'?: ScoringFrontendFacts;
  devsvc?: DevSvcFacts;
  users?: { usersUrl: string };
  calculator?: { url: string };
  scripts?: { url: string; folder: string };
  console?: ConsoleFacts;
}

/** Every started component's facts in one object. */
export function mergeFacts(started: Iterable<{ facts?: PublishedFacts }>): PublishedFacts {
  const merged: PublishedFacts = {};
  for (const { facts } of started) Object.assign(merged, facts);
  return merged;
}
