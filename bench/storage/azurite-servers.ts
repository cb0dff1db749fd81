// offcloud storage alone in this process (so the process's CPU time is ours), on its own data folder; Azurite runs beside it (azurite.ts).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startStorage } from '../../src/storage/server.ts';
import { announce } from '../common/child.ts';

const oursDir = await mkdtemp(join(tmpdir(), 'bench-storage-ours-'));
const ours = await startStorage({ dataDir: oursDir, port: 0, httpsPort: 0, logLevel: 'silent' });
announce({ ours: ours.facts!.storage!.httpBlobEndpoint, oursPid: process.pid }, async () => {
  await ours.close();
  await rm(oursDir, { recursive: true, force: true });
});
