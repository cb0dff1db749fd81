/**
 * The Testcontainers module where the engine's host is reached by a name, as
 * a Docker host on another machine is (DOCKER_HOST=tcp://…): here
 * TESTCONTAINERS_HOST_OVERRIDE names this machine by its host name. The module
 * hands that name back and the container's certificates carry it
 * (OFFCLOUD_TLS_NAMES), so an HTTPS client that checks names trusts the URLs
 * with the CA alone. The CA is made beforehand on the host (`offcloud ca`) and
 * handed in with withCa, so a process started with NODE_EXTRA_CA_CERTS trusts it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { execFile } from 'node:child_process';
import { lookup } from 'node:dns/promises';
import { mkdtemp, readFile } from 'node:fs/promises';
import { hostname, networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { promisify } from 'node:util';
import { Agent, request } from 'undici';
import { OffcloudContainer, type StartedOffcloudContainer } from '../../packages/testcontainers/src/index.ts';
import { BUILD_TIMEOUT, ensureImage } from '../containers/podman.ts';
import { offcloudAtOnce } from '../helpers/index.ts';
import { cleanUpNamed, startDockerApi, type DockerApi } from './docker-api.ts';

const NAME = `offcloud-testcontainers-remote-${process.pid}`;
const HOST = hostname();
let work: string;
/** The CA made on the host before the container, as a user does with `npx offcloud ca`. */
let caFolder: string;
let api: DockerApi | undefined;
let offcloud: StartedOffcloudContainer | undefined;

before(async () => {
  // The name must reach this machine (an /etc/hosts line, as container and CI machines have).
  const { address } = await lookup(HOST);
  const own = Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((a) => a.address));
  assert.ok(own.includes(address), `${HOST} resolves to ${address}, not an address of this machine`);
  const { image } = await ensureImage();
  work = await mkdtemp(join(tmpdir(), 'offcloud-tc-'));
  api = await startDockerApi(work);
  process.env.DOCKER_HOST = api.dockerHost;
  process.env.TESTCONTAINERS_RYUK_DISABLED = 'true';
  process.env.TESTCONTAINERS_HOST_OVERRIDE = HOST;
  caFolder = join(work, 'host', 'ca');
  await offcloudAtOnce([['ca', '--data-dir', join(work, 'host')]]);
  offcloud = await new OffcloudContainer(image).withName(NAME).withComponents(['identity']).withCa(caFolder).start();
}, BUILD_TIMEOUT);

after(() => cleanUpNamed(NAME, offcloud, api, work));

test('a Docker host reached by name: the URLs name it, its certificate carries it, and an HTTPS client trusting only the CA checks it', async () => {
  assert.ok(offcloud, 'the container did not start');
  assert.equal(offcloud.getHost(), HOST);
  const { authorityHost, tenantId } = offcloud.getIdentity();
  const url = new URL(authorityHost);
  assert.equal(url.hostname, HOST);

  const ca = offcloud.getCaCertificate();
  const presented = await new Promise<X509Certificate>((resolve, reject) => {
    const socket = connect({ host: HOST, port: Number(url.port), ca, servername: HOST }, () => {
      resolve(new X509Certificate(socket.getPeerCertificate().raw));
      socket.end();
    });
    socket.on('error', reject);
  });
  assert.equal(presented.checkHost(HOST), HOST);
  assert.equal(presented.checkHost('localhost'), 'localhost');

  const agent = new Agent({ connect: { ca } });
  try {
    const answer = await request(`${authorityHost}/${tenantId}/v2.0/.well-known/openid-configuration`, { dispatcher: agent });
    assert.equal(answer.statusCode, 200);
    assert.ok(((await answer.body.json()) as { issuer: string }).issuer);
  } finally {
    await agent.close();
  }
});

test('a CA made beforehand (offcloud ca, withCa): the container serves a certificate it issued from it, so a process started with NODE_EXTRA_CA_CERTS trusts the URLs', async () => {
  assert.ok(offcloud, 'the container did not start');
  const caFile = join(caFolder, 'ca.crt');
  assert.equal(offcloud.getCaCertificate(), await readFile(caFile, 'utf8'));
  const { authorityHost, tenantId } = offcloud.getIdentity();
  // A new process, as a test runner starts one: plain fetch, no CA handed to the client.
  const fetchIssuer = `fetch(process.argv[1]).then(async (r) => console.log(r.status, (await r.json()).issuer), (e) => console.log('failed', e.cause?.code ?? e.message))`;
  const run = (env: NodeJS.ProcessEnv) =>
    promisify(execFile)(process.execPath, ['-e', fetchIssuer, `${authorityHost}/${tenantId}/v2.0/.well-known/openid-configuration`], { env });
  const { NODE_EXTRA_CA_CERTS: _, ...withoutCa } = process.env;
  const trusting = await run({ ...withoutCa, NODE_EXTRA_CA_CERTS: caFile });
  assert.match(trusting.stdout, /^200 https:\/\//, trusting.stdout + trusting.stderr);
  const untrusting = await run(withoutCa);
  assert.match(untrusting.stdout, /^failed UNABLE_TO_VERIFY_LEAF_SIGNATURE/, untrusting.stdout);
});

test('withCa refuses a folder without the CA, and withDataDir beside it, before any container starts', async () => {
  await assert.rejects(
    new OffcloudContainer().withCa(join(work, 'nothing-here')).start(),
    /withCa: cannot read .*nothing-here\/ca\.crt \(make the CA with `offcloud ca --data-dir DIR`/,
  );
  await assert.rejects(new OffcloudContainer().withCa(caFolder).withDataDir(work).start(), /withCa and withDataDir together/);
});
