// One DevSvc replica in its own process, registered over mdns under the bench's service name.
import { startDevSvc } from '../../src/devices/devsvc-server.ts';
import { announce } from '../common/child.ts';

const devsvc = await startDevSvc({
  logLevel: 'silent',
  dataDir: process.env.BENCH_DEVICES_DATA!,
  serviceName: process.env.BENCH_DEVICES_SERVICE!,
  registry: 'mdns',
});
announce({ address: devsvc.facts!.devsvc!.address, registry: devsvc.facts!.devsvc!.registry, pid: process.pid }, () => devsvc.close());
