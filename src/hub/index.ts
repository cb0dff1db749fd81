import { defineComponent } from '../common/component.ts';
import { deviceCommand } from './cli.ts';
import { hubOptions } from './options.ts';

export const hub = defineComponent({
  name: 'hub',
  summary: 'Device hub: MQTT 3.1.1 over TLS with SAS auth, telemetry, C2D, twins, direct methods (§4.11)',
  options: hubOptions,
  start: async (options) => (await import('./server.ts')).startHub(options),
  subcommands: { device: deviceCommand },
});
