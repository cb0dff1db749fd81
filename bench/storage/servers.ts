// Identity and storage on one data dir (a fresh one, removed at the end, unless given), for the storage benchmark's clients.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startIdentity } from '../../src/identity/start.ts';
import { startStorage } from '../../src/storage/server.ts';
import { announce } from '../common/child.ts';

const given = process.argv[2];
const dataDir = given ?? (await mkdtemp(join(tmpdir(), 'offcloud-bench-storage-')));
const identity = await startIdentity({ dataDir, port: 0, imdsPort: 0, logLevel: 'silent' });
const storage = await startStorage({ dataDir, port: 0, httpsPort: 0, logLevel: 'silent', authorityHost: identity.facts!.identity!.authorityHost });
announce(
  {
    blobEndpoint: storage.urls[0]!.url,
    httpBlobEndpoint: storage.facts!.storage!.httpBlobEndpoint,
    accountKey: storage.facts!.storage!.accountKey,
    caCertPath: storage.caCertPath,
    imdsUrl: identity.facts!.identity!.imdsUrl,
    pid: process.pid,
  },
  async () => {
    await Promise.all([storage.close(), identity.close()]);
    if (!given) await rm(dataDir, { recursive: true, force: true });
  },
);
