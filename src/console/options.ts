/**
 * The console's options, apart from its server so the CLI can list them
 * without loading it. Each component the console shows is given by its
 * public URL and the key a client of it would use; under `offcloud up` they
 * come from the components started before it (see wire-up.ts).
 */
import { commonOptions, portOption, type ListOption, type StringOption } from '../common/config.ts';
import { registryOptions } from '../devices/discovery/index.ts';
import { serviceNameOption } from '../devices/options.ts';

function text(description: string): StringOption {
  return { type: 'string', default: '', description };
}

export const consoleOptions = {
  ...commonOptions,
  port: portOption(8090),
  loginToken: text('token the console asks for when --host is not loopback (default: a new one, printed once at start)'),
  caFile: text("CA file the components' HTTPS and TLS certificates chain to (default: the local CA of the data dir)"),
  hubUrl: text("the hub's REST URL (https://…:8884)"),
  hubConnectionString: text("the hub's service connection string (HostName=…;SharedAccessKeyName=iothubowner;SharedAccessKey=…)"),
  hubDeviceConnectionString: text('a device connection string for the client snippets on the overview'),
  storageConnectionString: text('storage connection string with AccountName, AccountKey and BlobEndpoint (Shared Key)'),
  identityUrl: text("identity's issuer origin (authority host, https://…:9440)"),
  identityTenant: text("identity's tenant id"),
  identityDirectory: text("identity's directory file (applications, clients, grants, managed identities)"),
  identityImdsUrl: text("identity's managed identity endpoint (IMDS origin)"),
  gatewayAdminUrl: text("the gateway's admin API (http://127.0.0.1:8001)"),
  gatewayProxyUrl: text("the gateway's proxy (http://…:8000)"),
  scriptsUrl: text("the scripts server's index URL (http://…:8080/)"),
  scriptsUser: text('user:password for a scripts server that asks for basic authentication'),
  sentimentUrl: text("the sentiment container's origin"),
  faceUrl: text("the face container's origin"),
  scoringUrl: text("a scoring service's score URL on the front end (…/api/v1/service/<name>/score)"),
  scoringKey: text("that service's primary key"),
  imagenetLabels: text('ImageNet class index JSON that names the scoring classes (default: imagenet-labels from the models folders)'),
  billingUrl: text("billing's origin"),
  devdataUrl: text("the device data service's origin (http://…:8081)"),
  devsvcAddress: text('host:port of a DevSvc replica (gRPC) the device lookup asks'),
  // The registry DevSvc replicas register in, as the data service takes it: the devices page lists every replica there.
  ...serviceNameOption,
  ...registryOptions,
  endpoints: { type: 'list', default: [], description: 'more endpoints for the overview, each "component|label|url"' } as ListOption,
  credentials: { type: 'list', default: [], description: 'more credential lines for the overview, each "component|line"' } as ListOption,
} as const;
