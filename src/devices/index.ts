/**
 * Two components and one command group from this folder: `devsvc` (gRPC
 * device lookup, registered in a service registry), `devdata` (REST
 * GET /data/<device>, port 8081) and `offcloud devices …`.
 */
import { defineComponent } from '../common/component.ts';
import { registryOfDevSvc } from './discovery/index.ts';
import { devdataOptions, devsvcOptions } from './options.ts';

export { devicesCommands } from './commands.ts';

export const devsvc = defineComponent({
  name: 'devsvc',
  summary: 'Device lookup service: gRPC DevSvc.Get on any free port, registered in etcd|mdns|kubernetes (§4.5.1)',
  options: devsvcOptions,
  start: async (options) => (await import('./devsvc-server.ts')).startDevSvc(options),
  // `offcloud up` needs nothing installed: multicast DNS (or static wiring where multicast is off),
  // unless OFFCLOUD_REGISTRY names another registry.
  upDefaults: { registry: process.env.OFFCLOUD_REGISTRY ?? 'mdns' },
});

export const devdata = defineComponent({
  name: 'devdata',
  summary: 'Device data service: GET /data/<device> on :8081, asks DevSvc through the registry (§4.4.1)',
  options: devdataOptions,
  start: async (options) => (await import('./devdata-server.ts')).startDevData(options),
  // Under `offcloud up`, find DevSvc the way it registered (mdns, or its address if it fell back to static).
  wireUp: ({ devsvc }) => registryOfDevSvc(devsvc),
});
