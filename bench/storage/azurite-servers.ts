// offcloud storage in this process, and Azurite's blob service (its npm package) as a child of it, each on its own data folder.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { startStorage } from '../../src/storage/server.ts';
import { announce } from '../common/child.ts';

/** The blob service's entry point, as Azurite's package names it (its `azurite-blob` command). */
function azuriteBlobMain(): string {
  const manifest = createRequire(import.meta.url).resolve('azurite/package.json');
  const { bin } = createRequire(import.meta.url)(manifest) as { bin: Record<string, string> };
  return join(dirname(manifest), bin['azurite-blob']!);
}

/** Starts Azurite on a free port and answers with its account URL once it says it listens. */
async function startAzurite(location: string) {
  const azurite = spawn(
    process.execPath,
    // The SDK sends a newer x-ms-version than Azurite knows: without these two it refuses every request.
    [azuriteBlobMain(), '--blobHost', '127.0.0.1', '--blobPort', '0', '--location', location, '--silent', '--skipApiVersionCheck', '--loose'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: azurite.stdout });
  const url = await new Promise<string>((resolve, reject) => {
    lines.on('line', (line) => {
      const listening = /successfully listens on (http:\/\/\S+)/.exec(line);
      if (listening) resolve(listening[1]!);
    });
    azurite.once('exit', (code) => reject(new Error(`Azurite exited (${code}) before it listened`)));
  });
  return {
    url: `${url}/devstoreaccount1`,
    pid: azurite.pid!,
    stop: async () => {
      if (azurite.exitCode !== null) return;
      azurite.kill('SIGTERM');
      await once(azurite, 'exit');
    },
  };
}

const oursDir = await mkdtemp(join(tmpdir(), 'bench-storage-ours-'));
const azuriteDir = await mkdtemp(join(tmpdir(), 'bench-storage-azurite-'));
const ours = await startStorage({ dataDir: oursDir, port: 0, httpsPort: 0, logLevel: 'silent' });
const azurite = await startAzurite(azuriteDir);
// This process holds only our server, so its CPU time is ours; Azurite's is read from its own pid.
announce({ ours: ours.facts!.storage!.httpBlobEndpoint, oursPid: process.pid, azurite: azurite.url, azuritePid: azurite.pid }, async () => {
  await Promise.all([azurite.stop(), ours.close()]);
  await Promise.all([rm(oursDir, { recursive: true, force: true }), rm(azuriteDir, { recursive: true, force: true })]);
});
