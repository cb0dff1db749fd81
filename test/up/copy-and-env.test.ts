/**
 * What a user copies from `offcloud up`'s table works as copied, and what
 * `offcloud env` exports is what the Azure SDKs read: the unmodified
 * `new DefaultAzureCredential()`, `ManagedIdentityCredential`,
 * `BlobServiceClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING)`
 * and `deviceSdk.Client.fromConnectionString(process.env.IOTHUB_DEVICE_CONNECTION_STRING)`
 * in a child process after `eval "$(offcloud env)"`.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { Agent as HttpsAgent } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BlobServiceClient, type StoragePipelineOptions } from '@azure/storage-blob';
import deviceSdk from 'azure-iot-device';
import mqttTransport from 'azure-iot-device-mqtt';
import serviceSdk from 'azure-iothub';
import { Agent, request } from 'undici';
import { LineWatcher, tempDataDir, eventWithin } from '../helpers/index.ts';
import { anyFreePortFlags, linesTooWide } from '../helpers/up.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const BIN = join(ROOT, 'bin', 'offcloud.js');
const ENV_CLIENT = new URL('./env-client.mjs', import.meta.url).pathname;

let up: ChildProcess;
let dataDir: string;
let table: string;
let ca: string;
const hooks: (() => unknown)[] = [];

before(async () => {
  dataDir = await tempDataDir({ after: (fn) => hooks.push(fn) });
  up = spawn(process.execPath, [BIN, 'up', '--only', 'storage,hub,gateway,identity', '--data-dir', dataDir, '--log-level', 'warn', ...anyFreePortFlags()], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout = new LineWatcher(up.stdout!);
  const stderr = new LineWatcher(up.stderr!);
  await stdout.waitFor(/^Every value above as shell variables/, 120_000).catch((err: Error) => {
    throw new Error(`${err.message}\nstderr:\n${stderr.text.slice(-3000)}`);
  });
  table = stdout.text;
  ca = await readFile(join(dataDir, 'ca', 'ca.crt'), 'utf8');
});

after(async () => {
  up.kill('SIGTERM');
  await eventWithin(up, 'exit', '`offcloud up` to exit after SIGTERM', 60_000);
  for (const hook of hooks) await hook();
});

/**
 * The value a person selects from the table for `label`: after `label: ` on its
 * line, or, when the value did not fit there, the whole next line.
 */
function copy(label: string): string {
  // A component's first line starts with its name.
  const lines = table.split('\n').map((line) => line.replace(/^[a-z][a-z-]* +/, '').trim());
  const at = lines.findIndex((line) => line.startsWith(`· ${label}:`) || line.startsWith(label));
  assert.ok(at >= 0, `the table shows "${label}"`);
  const line = lines[at]!.replace(/^· /, '');
  const rest = line.slice(label.length).replace(/^:/, '').trim();
  return rest || lines[at + 1]!;
}

test('every value copied from the table works: storage connection strings, the hub device and service strings, the gateway key, the demo client', async () => {
  assert.deepEqual(linesTooWide(table), [], 'every line but a lone value fits 100 columns');

  for (const label of ['connection string', 'over plain HTTP']) {
    const https = label === 'connection string';
    const blobs = https
      ? BlobServiceClient.fromConnectionString(copy(label), { agent: new HttpsAgent({ ca }) } as StoragePipelineOptions)
      : BlobServiceClient.fromConnectionString(copy(label));
    const name = https ? 'copied-https' : 'copied-http';
    await blobs.getContainerClient(name).create();
    const names: string[] = [];
    for await (const container of blobs.listContainers()) names.push(container.name);
    assert.ok(names.includes(name), `${label}: ${names.join(', ')}`);
  }

  const device = deviceSdk.Client.fromConnectionString(copy('device demo-device connection string'), mqttTransport.Mqtt);
  await device.setOptions({ ca });
  await device.open();
  await device.sendEvent(new deviceSdk.Message('copied'));
  await device.close();

  const service = serviceSdk.ConnectionString.parse(copy('service connection string (iothubowner)'));
  const sas = serviceSdk.SharedAccessSignature.create(
    service.HostName!,
    service.SharedAccessKeyName!,
    service.SharedAccessKey!,
    Math.floor(Date.now() / 1000) + 600,
  );
  const dispatcher = new Agent({ connect: { ca } });
  try {
    const twin = await request(`${copy('REST (service, SAS iothubowner)')}/twins/demo-device?api-version=2021-04-12`, {
      dispatcher,
      headers: { authorization: sas.toString() },
    });
    const twinBody = await twin.body.text();
    assert.equal(twin.statusCode, 200, twinBody);
  } finally {
    await dispatcher.close();
  }

  const key = copy("consumer demo's key (query ?apikey= or header apikey:)");
  const sum = await request(`${copy('proxy')}/calc/v1/add/2/3?apikey=${encodeURIComponent(key)}`);
  assert.equal(await sum.body.text(), '5');

  const identity = new Agent({ connect: { ca } });
  try {
    const authority = copy('authority host');
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: copy('demo client'),
      client_secret: copy('demo client secret'),
      scope: copy('token scope (bearer tokens need the HTTPS endpoint)'),
    });
    const issued = await request(`${authority}/${copy('tenant')}/oauth2/v2.0/token`, {
      method: 'POST',
      dispatcher: identity,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    });
    const { access_token: token } = (await issued.body.json()) as { access_token: string };
    const listed = await request(`${copy('blob endpoint (HTTPS: bearer tokens, Shared Key, SAS)')}?comp=list`, {
      dispatcher: identity,
      headers: { authorization: `Bearer ${token}`, 'x-ms-version': '2020-04-08' },
    });
    assert.match(await listed.body.text(), /<Name>copied-https<\/Name>/);

    const appService = await request(`${copy('App Service style: IDENTITY_ENDPOINT')}?api-version=2019-08-01&resource=https://storage.azure.com`, {
      headers: { 'x-identity-header': copy('App Service style: IDENTITY_HEADER') },
    });
    const appServiceBody = await appService.body.text();
    assert.equal(appService.statusCode, 200, appServiceBody);
  } finally {
    await identity.close();
  }
});

test('after eval "$(offcloud env)", the unmodified Azure SDK samples work: DefaultAzureCredential, ManagedIdentityCredential, fromConnectionString(process.env…)', async () => {
  const script = `set -e\neval "$("${process.execPath}" "${BIN}" env --data-dir "${dataDir}")"\nexec "${process.execPath}" "${ENV_CLIENT}"`;
  // Nothing of this process's environment that the SDKs read leaks in: only what env printed.
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(AZURE_|IOTHUB_|NODE_EXTRA_CA_CERTS|IDENTITY_|IMDS_|MSI_)/.test(name)));
  const { stdout } = await promisify(execFile)('bash', ['-c', script], { cwd: ROOT, env: clean, timeout: 120_000 });
  const answer = JSON.parse(stdout.trim().split('\n').at(-1)!) as { tokenLength: number; managedLength: number; containers: string[]; device: string };
  assert.ok(answer.tokenLength > 100 && answer.managedLength > 100, stdout);
  assert.ok(answer.containers.includes('from-env'), stdout);
  assert.equal(answer.device, 'sent');
});
