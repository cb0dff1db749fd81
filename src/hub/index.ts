import { defineComponent } from '../common/component.ts';
import { deviceCommand, sasCommand } from './cli.ts';
import { hubOptions } from './options.ts';

export const hub = defineComponent({
  name: 'hub',
  summary: 'Device hub: MQTT, AMQP and HTTPS devices with SAS auth, telemetry, C2D, twins, direct methods, queries (§4.11)',
  options: hubOptions,
  start: async (options) => (await import('./server.ts')).startHub(options),
  // Under `offcloud up` devices upload files into the storage component started before.
  wireUp: ({ storage }) => (storage ? { fileUploadConnectionString: storage.connectionString } : {}),
  subcommands: { device: deviceCommand, sas: sasCommand },
});
