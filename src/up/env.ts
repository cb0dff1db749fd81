/**
 * `offcloud env`: what a running `offcloud up` started (or the components
 * started alone on this host with the same data dir: one per compose
 * container), as shell variables
 * (`eval "$(npx offcloud env)"`), read from the facts in up.json: every
 * component's origin, the CA file, and the names the Azure SDKs and their
 * samples read (AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_CLIENT_SECRET,
 * AZURE_AUTHORITY_HOST, AZURE_POD_IDENTITY_AUTHORITY_HOST,
 * AZURE_STORAGE_CONNECTION_STRING, IOTHUB_CONNECTION_STRING,
 * IOTHUB_DEVICE_CONNECTION_STRING, NODE_EXTRA_CA_CERTS) beside offcloud's own
 * short ones (TENANT, CLIENT_ID, SECRET, TOKEN, DEMO_KEY, PRIMARY_KEY,
 * DEVICE_CONNECTION_STRING, SAS_TOKEN…). The README's examples use exactly
 * these names.
 */
import { readFile } from 'node:fs/promises';
import { commandDataDir, parseCommandArgs, toStdout, type Print } from '../common/command-line.ts';
import { StartupError, UsageError } from '../common/errors.ts';
import type { IdentityFacts } from '../common/facts.ts';
import { readRunningState, type UpState } from './state.ts';

const USAGE = 'offcloud env [--data-dir DIR]';
/** Tokens made here live an hour, like the ones identity issues by default. */
const SAS_LIFETIME_SECONDS = 3600;
/**
 * AZURE_TENANT_ID for the Azure SDKs: an ADFS-style authority, which MSAL
 * trusts without asking login.microsoftonline.com (instance discovery), so
 * `new DefaultAzureCredential()` works with no network; identity answers it
 * as its default tenant (TENANT holds that tenant's id).
 */
export const SDK_TENANT = 'adfs';

/** A value quoted for sh, bash and zsh. */
function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** `SCORING_FRONTEND_URL` for `scoring-frontend`. */
export function urlVariable(component: string): string {
  return `${component.toUpperCase().replaceAll('-', '_')}_URL`;
}

/** scheme://host:port, for mqtts:// and grpc:// too (URL.origin is "null" for schemes it does not know). */
function originOf(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}`;
}

/** A client-credentials token for storage, from the running identity component. */
async function storageToken(identity: IdentityFacts, client: NonNullable<IdentityFacts['demoClient']>, scope: string, ca: string | null): Promise<string> {
  const { Agent, request } = await import('undici');
  const dispatcher = new Agent({ connect: ca ? { ca: await readFile(ca, 'utf8') } : {} });
  try {
    const answer = await request(`${identity.authorityHost}/${identity.tenantId}/oauth2/v2.0/token`, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret, scope }).toString(),
    });
    const body = (await answer.body.json()) as { access_token?: string; error_description?: string };
    if (!body.access_token) throw new StartupError(`identity refused a storage token: ${body.error_description ?? answer.statusCode}`);
    return body.access_token;
  } finally {
    await dispatcher.close();
  }
}

type Value = string | { missing: string };

/** The variables, in the order printed; a value that cannot be made is a comment saying why. */
export async function environment(state: UpState): Promise<[name: string, value: Value][]> {
  const { components, facts } = state;
  const vars: [string, Value][] = [];
  const set = (names: string[], value: string | undefined, missing: string) => {
    for (const name of names) vars.push([name, value ?? { missing }]);
  };
  const notRunning = (component: string) => `${component} is not running${state.failed[component] ? `: ${state.failed[component].reason}` : ''}`;

  for (const [name, record] of Object.entries(components)) {
    if (record.urls[0]) vars.push([urlVariable(name), originOf(record.urls[0].url)]);
  }
  const ca = Object.values(components).find((c) => c.caCertPath)?.caCertPath ?? null;
  set(['CA', 'NODE_EXTRA_CA_CERTS'], ca ?? undefined, 'no component serves TLS');

  const { identity } = facts;
  const noIdentity = notRunning('identity');
  set(['TENANT'], identity?.tenantId, noIdentity);
  set(['AZURE_TENANT_ID'], identity && SDK_TENANT, noIdentity);
  set(['AZURE_AUTHORITY_HOST'], identity?.authorityHost, noIdentity);
  set(['IMDS_URL', 'AZURE_POD_IDENTITY_AUTHORITY_HOST'], identity?.imdsUrl, noIdentity);
  const demo = identity?.demoClient;
  const noDemo = identity ? 'the demo client is gone (its secret was removed); make one with offcloud identity secret add' : noIdentity;
  set(['CLIENT_ID', 'AZURE_CLIENT_ID'], demo?.clientId, noDemo);
  set(['SECRET', 'AZURE_CLIENT_SECRET'], demo?.clientSecret, noDemo);
  const { storage } = facts;
  if (identity && demo && storage) {
    vars.push(['TOKEN', await storageToken(identity, demo, storage.tokenScope, ca).catch((err: Error) => ({ missing: err.message }))]);
  } else set(['TOKEN'], undefined, demo ? notRunning('storage') : noDemo);
  // Plain HTTP with Shared Key: what every SDK's fromConnectionString takes with no CA to trust.
  set(['AZURE_STORAGE_CONNECTION_STRING'], storage?.httpConnectionString, notRunning('storage'));

  set(['DEMO_KEY'], facts.gateway?.demoConsumer?.apiKey, facts.gateway ? 'the gateway runs a declarative file (no demo consumer)' : notRunning('gateway'));
  const scoring = Object.values(facts['scoring-frontend']?.services ?? {})[0];
  set(['PRIMARY_KEY'], scoring?.primaryKey, notRunning('scoring-frontend'));
  set(['SECONDARY_KEY'], scoring?.secondaryKey, notRunning('scoring-frontend'));

  const { hub } = facts;
  set(['IOTHUB_CONNECTION_STRING'], hub?.serviceConnectionString, notRunning('hub'));
  set(['HUB_REST_URL'], hub?.restUrl, notRunning('hub'));
  const device = hub?.demoDevice;
  const noDevice = hub ? 'the hub runs with no demo device' : notRunning('hub');
  set(['DEVICE_CONNECTION_STRING', 'IOTHUB_DEVICE_CONNECTION_STRING'], device?.connectionString, noDevice);
  if (hub && device) {
    const { createSasToken } = await import('../hub/domain/sas.ts');
    const resource = `${hub.hostName}/devices/${device.deviceId}`;
    set(['DEVICE_ID'], device.deviceId, '');
    set(['SAS_TOKEN'], createSasToken(resource, device.primaryKey, Math.floor(Date.now() / 1000) + SAS_LIFETIME_SECONDS), '');
    set(['HUB_PORT'], new URL(hub.mqttUrl).port, '');
  } else set(['SAS_TOKEN'], undefined, noDevice);
  return vars;
}

/** `offcloud env`. */
export async function printEnv(args: string[], print: Print = toStdout): Promise<number> {
  const { values, positionals } = parseCommandArgs(args, { 'data-dir': { type: 'string' } }, USAGE);
  if (positionals.length) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}\nusage: ${USAGE}`);
  const dataDir = commandDataDir(values['data-dir']);
  const running = await readRunningState(dataDir);
  if (!running) {
    throw new StartupError(
      `neither offcloud up nor a component runs on the data dir ${dataDir} here; start them with \`npx offcloud up\` (and give the same --data-dir)`,
    );
  }
  const { state, what } = running;
  print(`# ${what}; values for its data dir ${dataDir}`);
  for (const [name, value] of await environment(state)) {
    print(typeof value === 'string' ? `export ${name}=${shellQuote(value)}` : `# ${name}: ${value.missing}`);
  }
  return 0;
}
