/**
 * The Testcontainers module (packages/testcontainers) as a user runs it: the
 * `testcontainers` library on a Docker-compatible socket (podman's API
 * service, started here; Ryuk is off because its image cannot be pulled), one
 * container running only a few components, and the official clients on the host using
 * only what the started container hands back.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BlobServiceClient } from '@azure/storage-blob';
import { TextAnalyticsClient, type TextAnalyticsModels } from '@azure/cognitiveservices-textanalytics';
import { ApiKeyCredentials } from '@azure/ms-rest-js';
import { Agent, request } from 'undici';
import { OffcloudContainer, type OffcloudComponent, type StartedOffcloudContainer } from '../../packages/testcontainers/src/index.ts';
import { reachableHost } from '../../packages/testcontainers/src/offcloud-container.ts';
import { BUILD_TIMEOUT, ensureImage } from '../containers/podman.ts';
import { cleanUpNamed, startDockerApi, type DockerApi } from './docker-api.ts';

const COMPONENTS: OffcloudComponent[] = ['storage', 'identity', 'calculator', 'sentiment'];
/** Named, so that `after` removes it even when start() failed (no Ryuk here to do it). */
const NAME = `offcloud-testcontainers-${process.pid}`;
let work: string;
let api: DockerApi | undefined;
let offcloud: StartedOffcloudContainer | undefined;

before(async () => {
  const { image } = await ensureImage();
  work = await mkdtemp(join(tmpdir(), 'offcloud-tc-'));
  api = await startDockerApi(work);
  process.env.DOCKER_HOST = api.dockerHost;
  process.env.TESTCONTAINERS_RYUK_DISABLED = 'true';
  // No TESTCONTAINERS_HOST_OVERRIDE: where Testcontainers answers the bridge's gateway (this
  // machine has a /.dockerenv), the module hands back localhost, the name the certificates carry.
  // The data dir is a host folder the image's user (uid 10001) can write to.
  const dataDir = join(work, 'data');
  await mkdir(dataDir);
  await chmod(dataDir, 0o777);
  offcloud = await new OffcloudContainer(image).withName(NAME).withComponents(COMPONENTS).withDataDir(dataDir).start();
}, BUILD_TIMEOUT);

after(() => cleanUpNamed(NAME, offcloud, api, work));

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

test('the host handed back is localhost for an address of this machine (the CA names it), and the runtime host otherwise', () => {
  const own = () => ['127.0.0.1', '10.88.0.1', '::1'];
  assert.equal(reachableHost('10.88.0.1', own), 'localhost');
  assert.equal(reachableHost('10.1.2.3', own), '10.1.2.3');
  assert.equal(reachableHost('build-server', own), 'build-server');
});

test('only the components asked for run, with what they need (billing for sentiment); another is refused by name', () => {
  assert.deepEqual(started().getComponents(), ['calculator', 'identity', 'storage', 'billing', 'sentiment']);
  assert.throws(
    () => started().getUrls('hub'),
    /hub does not run in this container \(calculator, identity, storage, billing, sentiment do\); add it with withComponents/,
  );
  assert.throws(() => started().getDetails('gateway'), /gateway does not run/);
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
