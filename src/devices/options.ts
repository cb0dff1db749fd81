/** Options of DevSvc and the device data service, apart from their servers so the CLI can list them without loading gRPC. */
import { commonOptions, portOption, type OptionSchema } from '../common/config.ts';
import { registryOptions } from './discovery/index.ts';

export const serviceNameOption = {
  serviceName: {
    type: 'string',
    default: 'devsvc',
    description: 'name DevSvc registers under and the data service looks up',
  },
} as const satisfies OptionSchema;

export const devsvcOptions = {
  ...commonOptions,
  address: {
    type: 'string',
    default: '',
    description: 'host:port for gRPC (default: --host on any free port)',
  },
  advertiseAddress: {
    type: 'string',
    default: '',
    description: "host:port written to the registry (default: the bound address; a wildcard host becomes this machine's first IPv4)",
  },
  ...serviceNameOption,
  ...registryOptions,
  registerTtl: { type: 'integer', default: 90, min: 1, max: 86_400, description: 'seconds a registration lives without a heartbeat' },
  registerInterval: { type: 'integer', default: 30, min: 1, max: 86_400, description: 'seconds between heartbeats (re-registrations)' },
  metricsPort: portOption(0, 'HTTP port of GET /metrics, /health and /ready beside gRPC (0 = any free port)'),
} as const satisfies OptionSchema;

export const devdataOptions = {
  ...commonOptions,
  port: portOption(8081),
  ...serviceNameOption,
  ...registryOptions,
  deadlineMs: { type: 'integer', default: 2000, min: 1, max: 60_000, description: 'deadline of each DevSvc.Get call, in ms' },
} as const;
