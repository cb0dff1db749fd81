/**
 * The Testcontainers module (packages/testcontainers) as a user runs it: the
 * `testcontainers` library on a Docker-compatible socket (podman's API
 * service, started here; Ryuk is off because its image cannot be pulled), one
 * container running only a few components, and the official clients on the host using
 * only what the started container hands back.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { chmod, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BlobServiceClient } from '@azure/storage-blob';
import { TextAnalyticsClient, type TextAnalyticsModels } from '@azure/cognitiveservices-textanalytics';
import { ApiKeyCredentials } from '@azure/ms-rest-js';
import { Agent, request } from 'undici';
import { OffcloudContainer, type OffcloudComponent, type StartedOffcloudContainer } from '../../packages/testcontainers/src/index.ts';
import { BUILD_TIMEOUT, ensureImage, removeContainer } from '../containers/podman.ts';

const COMPONENTS: OffcloudComponent[] = ['storage', 'identity', 'calculator', 'sentiment'];
/** Named, so that `after` removes it even when start() failed (no Ryuk here to do it). */
const NAME = `offcloud-testcontainers-${process.pid}`;
let work: string;
let service: ChildProcess | undefined;
let offcloud: StartedOffcloudContainer | undefined;

/** Resolves once the API socket answers `GET /_ping`. */
async function pinged(socketPath: string): Promise<void> {
  for (let i = 0; i < 240; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const req = httpRequest({ socketPath, path: '/_ping' }, (res) => (res.resume(), resolve(res.statusCode === 200)));
      req.on('error', () => resolve(false));
      req.end();
    });
    if (ok) return;
    if (service?.exitCode != null) break;
    await sleep(250);
  }
  throw new Error(`podman system service did not answer on ${socketPath}`);
}

before(async () => {
  const { image } = await ensureImage();
  work = await mkdtemp(join(tmpdir(), 'offcloud-tc-'));
  const socket = join(work, 'podman.sock');
  // podman.ts has pointed CONTAINERS_CONF at the settings this machine needs; the service inherits them.
  service = spawn('podman', ['system', 'service', '--time=0', `unix://${socket}`], { stdio: 'ignore' });
  await pinged(socket);
  process.env.DOCKER_HOST = `unix://${socket}`;
  process.env.TESTCONTAINERS_RYUK_DISABLED = 'true';
  // This machine is itself a container, where Testcontainers would answer the bridge's gateway
  // address as the host; the published ports are on this machine and the certificates name localhost.
  process.env.TESTCONTAINERS_HOST_OVERRIDE = 'localhost';
  // The data dir is a host folder the image's user (uid 10001) can write to.
  const dataDir = join(work, 'data');
  await mkdir(dataDir);
  await chmod(dataDir, 0o777);
  offcloud = await new OffcloudContainer(image).withName(NAME).withComponents(COMPONENTS).withDataDir(dataDir).start();
}, BUILD_TIMEOUT);

after(async () => {
  await offcloud?.stop();
  await removeContainer(NAME);
  service?.kill();
  if (work) await rm(work, { recursive: true, force: true });
});

function started(): StartedOffcloudContainer {
  assert.ok(offcloud, 'the container did not start');
  return offcloud;
}

test('withComponents refuses a name that is no component, and devsvc, saying why', () => {
  assert.throws(
    () => new OffcloudContainer().withComponents(['storge' as OffcloudComponent]),
    /unknown component "storge"; the components are calculator, .*storage/,
  );
  assert.throws(() => new OffcloudContainer().withComponents(['devsvc' as OffcloudComponent]), /devsvc listens on a free port .*through devdata/);
  assert.throws(() => new OffcloudContainer().withComponents([]), /name at least one component/);
});

test('only the components asked for run, with what they need (billing for sentiment); another is refused by name', () => {
  assert.deepEqual(started().getComponents(), ['calculator', 'identity', 'storage', 'billing', 'sentiment']);
  assert.throws(
    () => started().getUrls('hub'),
    /hub does not run in this container \(calculator, identity, storage, billing, sentiment do\); add it with withComponents/,
  );
  assert.throws(() => started().getCredentials('gateway'), /gateway does not run/);
  assert.match(started().getUrl('billing'), /^http:\/\/localhost:\d+$/);
});

test('the storage SDK with the returned connection string creates a container, uploads and downloads a blob', async () => {
  const service = BlobServiceClient.fromConnectionString(started().getConnectionString());
  const container = service.getContainerClient('testcontainers');
  await container.create();
  const text = `hello from ${process.pid}`;
  await container.getBlockBlobClient('greeting.txt').upload(text, Buffer.byteLength(text));
  const names: string[] = [];
  for await (const blob of container.listBlobsFlat()) names.push(blob.name);
  assert.deepEqual(names, ['greeting.txt']);
  assert.equal((await container.getBlobClient('greeting.txt').downloadToBuffer()).toString(), text);
  assert.equal(started().getAccountName(), 'devstoreaccount1');
});

test('the calculator and the sentiment container through the returned URLs', async () => {
  const calculator = started().getUrl('calculator');
  assert.equal(await (await fetch(`${calculator}/add/20/22`)).text(), '42');
  const client = new TextAnalyticsClient(new ApiKeyCredentials({ inHeader: { 'Ocp-Apim-Subscription-Key': 'any-key' } }), started().getUrl('sentiment'));
  // The client spreads the parsed body onto its response; its typings only say `body: any`.
  const result = (await client.sentiment({
    multiLanguageBatchInput: {
      documents: [
        { language: 'en', id: 'good', text: 'A wonderful, moving film with brilliant performances.' },
        { language: 'en', id: 'bad', text: 'A dull, lifeless mess. The worst movie of the year.' },
      ],
    },
  })) as unknown as TextAnalyticsModels.SentimentBatchResult;
  const score = (id: string) => result.documents!.find((d) => d.id === id)!.score!;
  assert.ok(score('good') > score('bad'), `good ${score('good')} vs bad ${score('bad')}`);
});

test('identity over HTTPS trusting the returned CA: a storage token from the demo client lists containers', async () => {
  const identity = started().getIdentity();
  const tokenUrl = `${identity.authorityHost}/${identity.tenantId}/oauth2/v2.0/token`;
  // Without the CA the issuer's certificate is not trusted.
  await assert.rejects(
    fetch(tokenUrl, { method: 'POST' }),
    (err: Error & { cause?: { code?: string } }) => err.cause?.code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  );
  const agent = new Agent({ connect: { ca: started().getCaCertificate() } });
  try {
    const answer = await request(tokenUrl, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: identity.clientId,
        client_secret: identity.clientSecret,
        scope: 'https://storage.azure.com/.default',
      }).toString(),
    });
    const body = (await answer.body.json()) as { access_token?: string };
    assert.equal(answer.statusCode, 200, JSON.stringify(body));
    const listing = await request(`${started().getBlobEndpoint()}?comp=list`, {
      dispatcher: agent,
      headers: { authorization: `Bearer ${body.access_token}`, 'x-ms-version': '2021-08-06' },
    });
    const xml = await listing.body.text();
    assert.equal(listing.statusCode, 200, xml);
    assert.match(xml, /<EnumerationResults/);
  } finally {
    await agent.close();
  }
});

test('withDataDir keeps the state in the host folder: the CA handed back is the one written there', async () => {
  assert.equal(started().getCaCertificate(), await readFile(join(work, 'data', 'ca', 'ca.crt'), 'utf8'));
});
