/**
 * `offcloud env`: what a running `offcloud up` started, as shell variables
 * (`eval "$(npx offcloud env)"`): every component's origin, the CA file, the
 * identity tenant and demo client, a fresh storage-audience token, the
 * gateway's demo key, the scoring front-end's keys, a SAS token and
 * connection string for the demo device. The README's examples use exactly
 * these names.
 */
import { readFile } from 'node:fs/promises';
import { commandDataDir, parseCommandArgs, toStdout, type Print } from '../common/command-line.ts';
import { StartupError, UsageError } from '../common/errors.ts';
import { readUpState, type StartedRecord, type UpState } from './state.ts';

const USAGE = 'offcloud env [--data-dir DIR]';
/** Tokens made here live an hour, like the ones identity issues by default. */
const SAS_LIFETIME_SECONDS = 3600;

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

function credential(record: StartedRecord | undefined, pattern: RegExp): string | undefined {
  for (const line of record?.credentials ?? []) {
    const match = pattern.exec(line);
    if (match) return match[1];
  }
  return undefined;
}

/** A client-credentials token for storage, from the running identity component. */
async function storageToken(identity: StartedRecord, ca: string | null): Promise<string> {
  const { exports } = identity;
  const { Agent, request } = await import('undici');
  const dispatcher = new Agent({ connect: ca ? { ca: await readFile(ca, 'utf8') } : {} });
  try {
    const answer = await request(`${exports.authorityHost}/${exports.tenantId}/oauth2/v2.0/token`, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: exports.demoClientId!,
        client_secret: exports.demoClientSecret!,
        scope: 'https://storage.azure.com/.default',
      }).toString(),
    });
    const body = (await answer.body.json()) as { access_token?: string; error_description?: string };
    if (!body.access_token) throw new StartupError(`identity refused a storage token: ${body.error_description ?? answer.statusCode}`);
    return body.access_token;
  } finally {
    await dispatcher.close();
  }
}

/** The variables, in the order printed; a value that cannot be made is a comment saying why. */
export async function environment(state: UpState): Promise<[name: string, value: string | { missing: string }][]> {
  const { components } = state;
  const vars: [string, string | { missing: string }][] = [];
  const set = (name: string, value: string | undefined, missing: string) => vars.push([name, value ?? { missing }]);
  const notRunning = (component: string) => `${component} is not running${state.failed[component] ? `: ${state.failed[component].reason}` : ''}`;

  for (const [name, record] of Object.entries(components)) {
    if (record.urls[0]) vars.push([urlVariable(name), originOf(record.urls[0].url)]);
  }
  const ca = Object.values(components).find((c) => c.caCertPath)?.caCertPath ?? null;
  set('CA', ca ?? undefined, 'no component serves TLS');

  const identity = components.identity;
  set('TENANT', identity?.exports.tenantId, notRunning('identity'));
  set('IMDS_URL', identity?.exports.imdsUrl, notRunning('identity'));
  const demoClient = identity?.exports.demoClientId ? identity : undefined;
  const noDemo = identity ? 'the demo client is gone (its secret was removed); make one with offcloud identity secret add' : notRunning('identity');
  set('CLIENT_ID', demoClient?.exports.demoClientId, noDemo);
  set('SECRET', demoClient?.exports.demoClientSecret, noDemo);
  if (demoClient && components.storage) {
    const token = await storageToken(demoClient, ca).catch((err: Error) => ({ missing: err.message }));
    vars.push(['TOKEN', token]);
  } else set('TOKEN', undefined, demoClient ? notRunning('storage') : noDemo);

  set('DEMO_KEY', credential(components.gateway, /apikey=(\S+)/), notRunning('gateway'));
  set('PRIMARY_KEY', credential(components['scoring-frontend'], /primary key (\S+)/), notRunning('scoring-frontend'));
  set('SECONDARY_KEY', credential(components['scoring-frontend'], /secondary key (\S+)/), notRunning('scoring-frontend'));

  const hub = components.hub;
  const device = credential(hub, /^device \S+: (HostName=\S+)$/);
  set('DEVICE_CONNECTION_STRING', device, hub ? 'the hub runs with no demo device' : notRunning('hub'));
  if (hub && device) {
    const fields = Object.fromEntries(device.split(';').map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
    const { createSasToken } = await import('../hub/domain/sas.ts');
    const resource = `${hub.exports.hubHostName}/devices/${fields.DeviceId}`;
    set('DEVICE_ID', fields.DeviceId, '');
    set('SAS_TOKEN', createSasToken(resource, fields.SharedAccessKey!, Math.floor(Date.now() / 1000) + SAS_LIFETIME_SECONDS), '');
    set('HUB_PORT', new URL(hub.exports.hubMqttUrl!).port, '');
  } else set('SAS_TOKEN', undefined, hub ? 'the hub runs with no demo device' : notRunning('hub'));
  return vars;
}

/** `offcloud env`. */
export async function printEnv(args: string[], print: Print = toStdout): Promise<number> {
  const { values, positionals } = parseCommandArgs(args, { 'data-dir': { type: 'string' } }, USAGE);
  if (positionals.length) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}\nusage: ${USAGE}`);
  const dataDir = commandDataDir(values['data-dir']);
  const state = await readUpState(dataDir);
  if (!state) throw new StartupError(`no offcloud up is running on the data dir ${dataDir}; start it with \`npx offcloud up\` (and give the same --data-dir)`);
  print(`# offcloud up, pid ${state.pid}, started ${state.startedAt}; values for its data dir ${dataDir}`);
  for (const [name, value] of await environment(state)) {
    print(typeof value === 'string' ? `export ${name}=${shellQuote(value)}` : `# ${name}: ${value.missing}`);
  }
  return 0;
}
