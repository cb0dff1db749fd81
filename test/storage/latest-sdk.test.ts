/**
 * The storage SDK a user gets today: `@azure/storage-blob@latest` and `@azure/identity@latest`,
 * installed from the registry when the test runs (not the lockfile's), drive the core blob
 * flows on every authentication path. Every SDK release sends a newer `x-ms-version`; this
 * is the test that fails the day one is refused. Skipped, with the reason, only when the
 * registry cannot be reached, and never under CI=true.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { tempDataDir } from '../helpers/index.ts';
import { suiteCleanup } from '../identity/helpers.ts';
import { startStorageStack } from './helpers.ts';

const run = promisify(execFile);
const cleanup = suiteCleanup(after);

/** Why the registry cannot be used, or null when it answers. */
async function registryUnreachable(): Promise<string | null> {
  try {
    await run('npm', ['ping'], { timeout: 60_000 });
    return null;
  } catch (err) {
    return `npm registry unreachable: ${((err as { stderr?: string }).stderr || (err as Error).message).trim().split('\n').pop()}`;
  }
}

test('R-BLOB-2 @azure/storage-blob@latest and @azure/identity@latest: core flows with Shared Key, SAS and a bearer token', { timeout: 600_000 }, async (t) => {
  const unreachable = await registryUnreachable();
  if (unreachable) {
    assert.notEqual(process.env.CI, 'true', `${unreachable} (under CI=true this test may not be skipped)`);
    t.skip(unreachable);
    return;
  }
  const dir = await tempDataDir(t);
  await writeFile(join(dir, 'package.json'), JSON.stringify({ private: true, type: 'module' }));
  await run('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock', '--loglevel=error', '@azure/storage-blob@latest', '@azure/identity@latest'], {
    cwd: dir,
    timeout: 480_000,
  });
  await copyFile(new URL('./latest-sdk/flows.mjs', import.meta.url), join(dir, 'flows.mjs'));

  const stack = await startStorageStack(cleanup);
  const { stdout } = await run(process.execPath, ['flows.mjs'], {
    cwd: dir,
    timeout: 120_000,
    env: {
      ...process.env,
      NODE_EXTRA_CA_CERTS: stack.identity.caCertPath,
      AZURE_POD_IDENTITY_AUTHORITY_HOST: stack.identity.imdsUrl,
      BLOB_ENDPOINT: stack.blobEndpoint,
      ACCOUNT_NAME: 'devstoreaccount1',
      ACCOUNT_KEY: stack.storage.facts!.storage!.accountKey,
    },
  });
  const result = JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, unknown> & { ok: boolean; storageBlob: string; identity: string };
  t.diagnostic(`@azure/storage-blob ${result.storageBlob}, @azure/identity ${result.identity}`);
  assert.equal(result.ok, true, JSON.stringify(result.error));
  for (const path of ['sharedKey', 'sas', 'bearer']) {
    const seen = result[path] as Record<string, unknown>;
    assert.equal(seen.uploadStatus, 201, path);
    assert.equal(seen.downloaded, 'hello latest', path);
    assert.equal(seen.blocks, 'AAAABBBBCCCC', path);
    assert.deepEqual(seen.properties, { contentType: 'text/plain', contentLength: 12, version: (seen.properties as { version: string }).version }, path);
    assert.match((seen.properties as { version: string }).version, /^\d{4}-\d{2}-\d{2}$/, path);
    assert.deepEqual(seen.listed, ['blocks.bin', 'dir/hello.txt'], path);
    assert.equal(seen.exists, false, path);
    assert.equal(seen.afterDelete, false, path);
  }
});
