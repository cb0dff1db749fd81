/** devices.proto loaded for grpc-js: the DevSvc service and a typed client. */
import { fileURLToPath } from 'node:url';
import { loadSync } from '@grpc/proto-loader';
import {
  credentials,
  loadPackageDefinition,
  type CallOptions,
  type ClientUnaryCall,
  type GrpcObject,
  type Metadata,
  type ServiceClientConstructor,
  type ServiceError,
} from '@grpc/grpc-js';
import type { Device } from './store.ts';

/** Shipped beside the code so any gRPC stub can be generated from it. */
export const PROTO_PATH = fileURLToPath(new URL('./devices.proto', import.meta.url));
/** The gRPC service name, for health checks: `devices.DevSvc`. */
export const DEVSVC_SERVICE = 'devices.DevSvc';

// keepCase: field names as written in the .proto; defaults: an empty Device reads as {name: '', active: false}.
export const devicesPackage = loadSync(PROTO_PATH, { keepCase: true, defaults: true });
const DevSvc = (loadPackageDefinition(devicesPackage).devices as GrpcObject).DevSvc as ServiceClientConstructor;
export const devSvcDefinition = DevSvc.service;

export interface DevSvcClient {
  Get(request: { name: string }, metadata: Metadata, options: CallOptions, callback: (error: ServiceError | null, device?: Device) => void): ClientUnaryCall;
  close(): void;
}

export function devSvcClient(address: string): DevSvcClient {
  return new DevSvc(address, credentials.createInsecure()) as unknown as DevSvcClient;
}
