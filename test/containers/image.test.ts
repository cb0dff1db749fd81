/**
 * The offcloud image, run the way the spec's containers are run: the spec's
 * `podman run` lines (container ports 5000/5001, `--memory`/`--cpus`, the
 * `Eula`/`Billing`/`ApiKey` start-up parameters), official clients on the host
 * talking through published ports, and `podman stop` ending each container
 * cleanly. Host ports are free ones, so the suite runs beside anything else.
 * This file: how the image is built, `offcloud up` in it, a missing start-up parameter.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { tempDataDir } from '../helpers/index.ts';
import { eventually } from '../hub/helpers.ts';
import { podman, podmanStatus, ROOT } from './podman.ts';
import { containerSuite, stopCleanly, throttled } from './suite.ts';

const suite = containerSuite();

test('the image builds from the repository, both build files are one, and it runs as a non-root user', async () => {
  assert.equal(await realpath(join(ROOT, 'Dockerfile')), await realpath(join(ROOT, 'Containerfile')));
  const { stdout } = await podman(['run', '--rm', '--entrypoint', 'id', suite.image(), '-u']);
  assert.notEqual(stdout.trim(), '0');
  const config = JSON.parse((await podman(['image', 'inspect', '--format', '{{json .Config}}', suite.image()])).stdout) as {
    User: string;
    Volumes?: Record<string, object>;
    Entrypoint: string[];
    Cmd: string[];
  };
  assert.equal(config.User, 'offcloud');
  assert.deepEqual(config.Entrypoint, ['/usr/bin/tini', '--', 'offcloud']);
  assert.deepEqual(config.Cmd, ['up']);
  // No VOLUME: each run would leave an anonymous volume behind; /data is mounted when it is to be kept.
  assert.equal(config.Volumes, undefined);
});

test('the default command is offcloud up: every component inside, listening on all interfaces, the CA in /data for the host', async (t) => {
  const up = await suite.run('up', { publish: [8082, 9440], args: [], readyPath: '/ready' });
  assert.equal(await (await fetch(`http://127.0.0.1:${up.ports[8082]}/add/2/3`)).text(), '5');
  const dir = await tempDataDir(t);
  await podman(['cp', `${up.name}:/data/ca/ca.crt`, join(dir, 'ca.crt')]);
  // The identity issuer's HTTPS certificate verifies against that CA from the host
  // (once up has reached it: components start one after another).
  const agent = new Agent({ connect: { ca: await readFile(join(dir, 'ca.crt'), 'utf8') } });
  try {
    const status = await eventually(
      throttled(() =>
        request(`https://localhost:${up.ports[9440]}/health`, { dispatcher: agent }).then(
          async (response) => (await response.body.dump(), response.statusCode),
          (err: NodeJS.ErrnoException) => (err.code === 'ECONNREFUSED' || err.code === 'ECONNRESET' ? undefined : Promise.reject(err)),
        ),
      ),
      180_000,
      'the identity issuer inside offcloud up',
    );
    assert.equal(status, 200);
  } finally {
    await agent.close();
  }
  // up's closing line, once every component has started, names the command that prints its values here.
  const hostName = (await podman(['inspect', '--format', '{{.Config.Hostname}}', up.name])).stdout.trim();
  const closing = `Every value above as shell variables: podman exec ${hostName} offcloud env`;
  await eventually(
    throttled(async () => ((await podman(['logs', up.name])).stdout.includes(closing) ? true : undefined)),
    180_000,
    `"${closing}" in the logs of ${up.name}`,
  );
  const env = (await podman(closing.slice(closing.indexOf('podman exec ') + 'podman '.length).split(' '))).stdout;
  assert.match(env, /^export CALCULATOR_URL='http:\/\/localhost:8082'$/m);
  assert.match(env, /^export CA='\/data\/ca\/ca\.crt'$/m);

  // Every port a component listens on is EXPOSEd (devsvc's is a free one; devdata reaches it inside).
  const state = JSON.parse((await podman(['exec', up.name, 'cat', '/data/up.json'])).stdout) as { components: Record<string, { urls: { url: string }[] }> };
  const exposed = Object.keys(JSON.parse((await podman(['image', 'inspect', '--format', '{{json .Config.ExposedPorts}}', suite.image()])).stdout) as object);
  const listening = Object.entries(state.components)
    .filter(([name]) => name !== 'devsvc')
    .flatMap(([, { urls }]) => urls.filter(({ url }) => URL.canParse(url)).map(({ url }) => `${new URL(url.replace(/\{[^}]*\}/g, 'x')).port}/tcp`));
  assert.ok(listening.length > 15, listening.join(' '));
  assert.deepEqual(
    listening.filter((port) => !exposed.includes(port)),
    [],
    `exposed: ${exposed.join(' ')}`,
  );
  await stopCleanly(up.name);
});

test('R-SENT-8 without Eula=accept the sentiment container exits non-zero with the message', () => {
  const result = podmanStatus(['run', '--rm', suite.image(), 'sentiment', 'Billing=http://127.0.0.1:5100', 'ApiKey=0123']);
  assert.notEqual(result.status, 0);
  assert.match(result.stderr, /sentiment: missing start-up parameter Eula; give Eula=accept/);
});
