/**
 * The devices page: the devices and their active flag from the file that
 * DevSvc serves and `offcloud devices` edits (same data dir), a toggle of the
 * flag, every DevSvc replica in the registry with its health and answers
 * (replicas.ts), and a device as DevSvc answers it over gRPC (its generated
 * stub of devices.proto); `/data/<device>` goes to the data service as forwarded.
 */
import { Metadata, status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import type { FastifyInstance } from 'fastify';
import type { OptionValues } from '../common/config.ts';
import { devSvcClient, type DevSvcClient } from '../devices/proto.ts';
import { deviceFilePath, readDevices, setDeviceActive } from '../devices/store.ts';
import { ConsoleError, InvalidInputError, NotConfiguredError } from './errors.ts';
import type { consoleOptions } from './options.ts';
import { ReplicaDirectory } from './replicas.ts';

type ConsoleValues = OptionValues<typeof consoleOptions>;

const DEADLINE_MS = 3000;

/** DevSvc's refusal, with the HTTP status nearest to its gRPC status and its own message. */
function fromGrpc(error: ServiceError): ConsoleError {
  const status =
    error.code === grpcStatus.NOT_FOUND ? 404 : error.code === grpcStatus.INVALID_ARGUMENT ? 400 : error.code === grpcStatus.DEADLINE_EXCEEDED ? 504 : 502;
  return new ConsoleError(status, grpcStatus[error.code] ?? 'UNKNOWN', error.details || error.message);
}

export function registerDeviceRoutes(app: FastifyInstance, options: ConsoleValues): void {
  let client: DevSvcClient | undefined;
  app.addHook('onClose', async () => client?.close());
  const devSvc = () => {
    if (!options.devsvcAddress) throw new NotConfiguredError("a DevSvc replica's address", 'devsvc-address');
    return (client ??= devSvcClient(options.devsvcAddress));
  };
  const file = deviceFilePath(options.dataDir);
  const devices = async () => {
    try {
      return await readDevices(file, false);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw new ConsoleError(500, 'DeviceFileInvalid', (err as Error).message);
    }
  };
  const replicas = new ReplicaDirectory(options, options.serviceName);
  app.addHook('onClose', () => replicas.close());

  app.get('/api/devices', async () => ({ file, devices: await devices() }));
  app.get('/api/devsvc/replicas', async () => replicas.replicas((await devices()).map((d) => d.name)));

  app.put<{ Params: { name: string }; Body: { active?: unknown } }>('/api/devices/:name/active', async (request) => {
    const active = request.body?.active;
    if (typeof active !== 'boolean') throw new InvalidInputError('"active" is true or false');
    if (!(await setDeviceActive(file, request.params.name, active)))
      throw new ConsoleError(404, 'DeviceNotFound', `no device ${request.params.name} in ${file}`);
    return { name: request.params.name, active };
  });

  app.get<{ Params: { name: string } }>('/api/devsvc/devices/:name', async (request) => {
    const replica = options.devsvcAddress;
    const device = await new Promise((resolve, reject) => {
      devSvc().Get({ name: request.params.name }, new Metadata(), { deadline: Date.now() + DEADLINE_MS }, (error, answer) =>
        error ? reject(fromGrpc(error)) : resolve(answer),
      );
    });
    return { replica, device };
  });
}
