/**
 * The identity component in its own process for the benchmark, so the load
 * generator does not share its event loop; prints its facts and the demo
 * client's credentials as one JSON line.
 */
import { startIdentity } from '../../src/identity/start.ts';
import { createClient, grantAppRole } from '../../src/identity/manage.ts';
import { openDirectory } from '../../src/identity/directory/index.ts';

const dataDir = process.argv[2];
if (!dataDir) throw new Error('usage: server.ts <data-dir>');
const running = await startIdentity({ dataDir, port: 0, imdsPort: 0, logLevel: 'error' });
const made = await openDirectory(dataDir).update((d) => {
  const c = createClient(d, { displayName: 'bench client' });
  grantAppRole(d, c.client.appId, 'api://offcloud-demo-api', 'Demo.Read.All');
  return { clientId: c.client.appId, clientSecret: c.secret };
});
process.stdout.write(`${JSON.stringify({ ...running.facts!.identity!, caCertPath: running.caCertPath, ...made })}\n`);
process.on('SIGTERM', () => {
  void running.close().then(() => process.exit(0));
});
