// Identity and storage on one data dir (a fresh one unless given), for the storage benchmark's clients.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startIdentity } from '../../src/identity/start.ts';
import { startStorage } from '../../src/storage/server.ts';
import { announce } from '../common/child.ts';

const dataDir = process.argv[2] ?? (await mkdtemp(join(tmpdir(), 'offcloud-bench-storage-')));
const identity = await startIdentity({ dataDir, port: 0, imdsPort: 0, logLevel: 'silent' });
const storage = await startStorage({ dataDir, port: 0, logLevel: 'silent', authorityHost: identity.exports!.authorityHost! });
const connection = storage.credentials!.find((line) => line.startsWith('connection string'))!;
announce(
  {
    blobEndpoint: storage.urls[0]!.url,
    httpBlobEndpoint: storage.exports!.httpBlobEndpoint,
    accountKey: /AccountKey=([^;]+);/.exec(connection)![1],
    caCertPath: storage.caCertPath,
    imdsUrl: identity.exports!.imdsUrl,
    dataDir,
    pid: process.pid,
  },
  () => Promise.all([storage.close(), identity.close()]),
);
