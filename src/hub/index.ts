import { defineComponent } from '../common/component.ts';
import { deviceCommand } from './cli.ts';
import { hubOptions, startHub } from './server.ts';

export const hub = defineComponent({
  name: 'hub',
  summary: 'Device hub: MQTT 3.1.1 over TLS with SAS auth, telemetry, C2D, twins, direct methods (§4.11)',
  options: hubOptions,
  start: startHub,
  subcommands: { device: deviceCommand },
});
