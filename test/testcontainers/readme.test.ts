/**
 * The module as a user installs and runs it: `npm install <folder>` into a new
 * project (its `prepare` builds dist/), the README's example pasted into a file
 * (the image name the only change) and run with node on podman's API socket,
 * with no TESTCONTAINERS_HOST_OVERRIDE: the module's answers reach the
 * container and its CA verifies the issuer's certificate.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { tempDataDir } from '../helpers/index.ts';
import { BUILD_TIMEOUT, ensureImage, podman, removeContainer, ROOT } from '../containers/podman.ts';
import { startDockerApi } from './docker-api.ts';

const run = promisify(execFile);
const MODULE = join(ROOT, 'packages/testcontainers');

/**
 * The containers Testcontainers made (it labels each), by id, less those the folder's other files
 * name `offcloud-testcontainers-…` and remove themselves: they may start while the example runs.
 */
async function testcontainersContainers(): Promise<string[]> {
  const { stdout } = await podman(['ps', '--all', '--filter', 'label=org.testcontainers=true', '--format', '{{.ID}} {{.Names}}']);
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' '))
    .filter(([, name]) => !name?.startsWith('offcloud-testcontainers-'))
    .map(([id]) => id!);
}

test('npm install <the module folder> builds it, and the README example runs as pasted', BUILD_TIMEOUT, async (t) => {
  const { image } = await ensureImage();
  const project = await tempDataDir(t);
  const api = await startDockerApi(project);
  t.after(() => api.stop());
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'readme-example', private: true, type: 'module' }));
  await run('npm', ['install', '--offline', MODULE], { cwd: project, timeout: 240_000 });
  // The clients the example uses, as the user's project has them from the registry: the repository's.
  await mkdir(join(project, 'node_modules/@azure'));
  await symlink(join(ROOT, 'node_modules/@azure/storage-blob'), join(project, 'node_modules/@azure/storage-blob'));
  await symlink(join(ROOT, 'node_modules/undici'), join(project, 'node_modules/undici'));

  const readme = await readFile(join(MODULE, 'README.md'), 'utf8');
  const example = /```js\n([\s\S]*?)```/.exec(readme)![1]!;
  assert.ok(example.includes("new OffcloudContainer('localhost/offcloud:dev')"));
  await writeFile(join(project, 'example.mjs'), example.replace("'localhost/offcloud:dev'", `'${image}'`));

  const before = await testcontainersContainers();
  const env: NodeJS.ProcessEnv = { ...process.env, DOCKER_HOST: api.dockerHost, TESTCONTAINERS_RYUK_DISABLED: 'true' };
  delete env.TESTCONTAINERS_HOST_OVERRIDE;
  try {
    const { stdout } = await run(process.execPath, ['example.mjs'], { cwd: project, env, timeout: 240_000 });
    assert.match(stdout, /^5 https:\/\/\S+\/v2\.0\n$/);
  } finally {
    // The example stops its container; one it left (it failed half-way) goes here.
    for (const id of await testcontainersContainers()) if (!before.includes(id)) await removeContainer(id);
  }
});
