/**
 * Starts the identity component: the token issuer (HTTPS, local CA by
 * default) and the managed identity endpoint (plain HTTP), sharing one
 * directory and one signing key set from the data dir.
 */
import { ComponentMetrics } from '../common/metrics.ts';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { withDefaults, type OptionValues, type RuntimeExtras } from '../common/config.ts';
import type { Detail, RunningComponent } from '../common/component.ts';
import type { IdentityFacts } from '../common/facts.ts';
import { createFileExclusive, removeStaleTemporaries } from '../common/files.ts';
import { createHttpServer, listenEach } from '../common/http.ts';
import { availableParallelism } from 'node:os';
import { createLogger } from '../common/log.ts';
import { resolveTls } from '../common/tls.ts';
import { openDirectory } from './directory/index.ts';
import { issuerFor, type IssuerStyle } from './issuer.ts';
import { registerImdsRoutes, APP_SERVICE_TOKEN_PATH } from './imds-server.ts';
import { registerIssuerRoutes, TOKEN_BODY_LIMIT } from './issuer-server.ts';
import { openSigningKeys } from './keys.ts';
import { TokenSigner } from './signer.ts';
import { identityOptions } from './options.ts';
import type { IssuerContext } from './tokens.ts';

export type IdentityOptions = OptionValues<typeof identityOptions>;

/** Where the App Service header secret made for a data dir is kept. */
export function identityHeaderPath(dataDir: string): string {
  return resolve(dataDir, 'identity', 'identity-header');
}

/** The App Service header secret: the option, or one made once per data dir. */
async function resolveIdentityHeader(dataDir: string, given: string): Promise<string> {
  if (given) return given;
  const path = identityHeaderPath(dataDir);
  await createFileExclusive(path, randomBytes(24).toString('base64url'), 0o600);
  return (await readFile(path, 'utf8')).trim();
}

function tableDetails(facts: IdentityFacts, demoSecretPath: string): Detail[] {
  const { demoClient } = facts;
  const demoLines: Detail[] = demoClient
    ? [
        { label: 'demo client', value: demoClient.clientId },
        // The demo secret is kept in the data dir, so later starts (and `offcloud env`) show it again.
        { label: 'demo client secret', value: demoClient.clientSecret },
        { label: 'demo client secret kept in', value: demoSecretPath },
        { label: 'demo API scope', value: demoClient.apiScope },
      ]
    : [{ label: 'clients and secrets: offcloud identity list / offcloud identity secret add --client <appId>' }];
  return [
    { label: 'tenant', value: facts.tenantId },
    ...demoLines,
    { label: 'authority host', value: facts.authorityHost },
    { label: 'SDKs: authorityHost with disableInstanceDiscovery: true, or tenant "adfs" (AZURE_TENANT_ID in offcloud env)' },
    { label: 'managed identity: AZURE_POD_IDENTITY_AUTHORITY_HOST', value: facts.imdsUrl },
    { label: 'App Service style: IDENTITY_ENDPOINT', value: facts.identityEndpoint },
    { label: 'App Service style: IDENTITY_HEADER', value: facts.identityHeader },
  ];
}

export async function startIdentity(given: Partial<IdentityOptions> & RuntimeExtras = {}): Promise<RunningComponent> {
  const options = withDefaults(identityOptions, given);
  const logger = given.logger ?? createLogger(options.logLevel, 'identity');
  const directory = openDirectory(options.dataDir, options.directory || undefined);
  const keys = openSigningKeys(options.dataDir);
  // What a management command (or an earlier start) killed mid-write left beside the files it writes.
  await Promise.all([directory.path, directory.demoSecretPath, keys.path, identityHeaderPath(options.dataDir)].map(removeStaleTemporaries));
  await directory.ensure();
  await keys.ensure();
  const tls = await resolveTls(options);
  const identityHeader = await resolveIdentityHeader(options.dataDir, options.identityHeader);

  let issuerUrl = '';
  const signer = await TokenSigner.start(options.signingThreads || availableParallelism());
  /** A start that fails after this point ends the signing threads, which would keep the process alive. */
  const failed = async (err: unknown): Promise<never> => {
    await signer.close();
    throw err;
  };
  const context = async (): Promise<IssuerContext> => ({
    directory: await directory.current(),
    keys: await keys.current(),
    signer,
    issuerStyle: options.issuerStyle as IssuerStyle,
    origin: issuerUrl,
    clientCredentialsLifetimeSeconds: options.tokenLifetime,
    managedIdentityLifetimeSeconds: options.managedIdentityTokenLifetime,
  });
  // Fail at start, not at the first request, when a file is unreadable.
  const first = await context().catch(failed);
  const demo = await directory.demoClient().catch(failed);

  // One registry for both servers: /metrics on either shows the whole component.
  const metrics = new ComponentMetrics('identity');
  const tokensIssued = metrics.counter('identity_tokens_issued_total', 'access tokens issued, by grant', ['grant']);
  const issuer = createHttpServer({ logger, tls, bodyLimit: TOKEN_BODY_LIMIT, metrics });
  registerIssuerRoutes(issuer, { context, origin: () => issuerUrl, tokensIssued });
  const metadata = createHttpServer({ logger, bodyLimit: 16 * 1024, metrics });
  registerImdsRoutes(metadata, { context, identityHeader, tokensIssued });

  const urls = await listenEach([
    [issuer, { host: options.host, port: options.port, component: 'identity' }],
    [metadata, { host: options.host, port: options.imdsPort, component: 'identity', portKey: 'imdsPort' }],
  ]).catch(failed);
  // The issuer's routes read issuerUrl per request: its own origin, known once it listens.
  issuerUrl = urls[0]!;
  const imdsUrl = urls[1]!;
  const tenantId = first.directory.defaultTenantId;
  const appServiceUrl = `${imdsUrl}${APP_SERVICE_TOKEN_PATH}`;
  logger.info({ issuerUrl, imdsUrl, tenantId }, 'identity listening');
  const facts: IdentityFacts = {
    authorityHost: issuerUrl,
    tenantId,
    imdsUrl,
    identityEndpoint: appServiceUrl,
    identityHeader,
    jwksUri: `${issuerUrl}/${tenantId}/discovery/v2.0/keys`,
    issuerV1: issuerFor(1, tenantId, options.issuerStyle as IssuerStyle, issuerUrl),
    issuerV2: issuerFor(2, tenantId, options.issuerStyle as IssuerStyle, issuerUrl),
    issuerStyle: options.issuerStyle,
    directoryPath: directory.path,
    ...(demo && {
      demoClient: {
        clientId: demo.appId,
        clientSecret: demo.secret,
        apiScope: `${first.directory.apis[0]?.identifierUris[0] ?? 'api://offcloud-demo-api'}/.default`,
      },
    }),
  };
  return {
    urls: [
      { label: 'token issuer (authority host)', url: issuerUrl },
      { label: 'token endpoint v2', url: `${issuerUrl}/${tenantId}/oauth2/v2.0/token` },
      { label: 'discovery', url: `${issuerUrl}/${tenantId}/v2.0/.well-known/openid-configuration` },
      { label: 'managed identity (IMDS)', url: `${imdsUrl}/metadata/identity/oauth2/token` },
    ],
    facts: { identity: facts },
    details: tableDetails(facts, directory.demoSecretPath),
    caCertPath: tls.caCertPath,
    close: async () => {
      await Promise.all([issuer.close(), metadata.close()]);
      await signer.close();
    },
  };
}
