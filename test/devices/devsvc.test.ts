import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { loadSync } from '@grpc/proto-loader';
import { credentials, loadPackageDefinition, Metadata, status, type GrpcObject, type ServiceClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { DEBIAN_PYTHON, debianProgram, quiet, readMetric, tempDataDir } from '../helpers/index.ts';
import { startDevSvc } from '../../src/devices/devsvc-server.ts';
import { devSvcClient, PROTO_PATH } from '../../src/devices/proto.ts';
import { addDevice, deviceFilePath } from '../../src/devices/store.ts';
import { lifo } from './helpers.ts';

const execFileAsync = promisify(execFile);
const { port: _port, ...quietHost } = quiet;

async function devsvc(t: Parameters<typeof tempDataDir>[0]) {
  const dataDir = await tempDataDir(t);
  const running = await startDevSvc({ ...quietHost, dataDir, registry: 'static' });
  t.after(() => running.close());
  return { address: running.facts!.devsvc!.address, dataDir, running };
}

// Debian's python3-grpcio with stubs that python3-grpc-tools generates from our shipped .proto.
const PYTHON_CLIENT = `
import sys, grpc
sys.path.insert(0, sys.argv[1])
import devices_pb2, devices_pb2_grpc
channel = grpc.insecure_channel(sys.argv[2])
stub = devices_pb2_grpc.DevSvcStub(channel)
for name in sys.argv[3:]:
    reply = stub.Get(devices_pb2.DeviceName(name=name), timeout=5)
    print(repr(name), repr(reply.name), reply.active, reply.ByteSize())
health = channel.unary_unary('/grpc.health.v1.Health/Check')(b'', timeout=5)
print('health', health.hex())
try:
    channel.unary_unary('/devices.DevSvc/Get')(b'\\xff\\xff\\xff\\xff', timeout=5)
    print('garbage accepted')
except grpc.RpcError as err:
    print('garbage', err.code().name)
print('after', stub.Get(devices_pb2.DeviceName(name='sensor-1'), timeout=5).active)
`;

test('R-DEV-1 R-DEV-6 an independent client (Debian python3-grpcio, stubs from devices.proto) gets a known and an unknown device', async (context) => {
  const t = lifo(context);
  debianProgram('python3-grpcio', '/usr/lib/python3/dist-packages/grpc/__init__.py');
  debianProgram('python3-grpc-tools', '/usr/lib/python3/dist-packages/grpc_tools/protoc.py');
  const { address, dataDir } = await devsvc(t);
  await execFileAsync(DEBIAN_PYTHON, [
    '-m',
    'grpc_tools.protoc',
    `-I${PROTO_PATH.replace(/\/[^/]+$/, '')}`,
    `--python_out=${dataDir}`,
    `--grpc_python_out=${dataDir}`,
    'devices.proto',
  ]);
  const { stdout } = await execFileAsync(DEBIAN_PYTHON, ['-c', PYTHON_CLIENT, dataDir, address, 'sensor-1', 'sensor-2', 'nobody', 'x'.repeat(10_240)]);
  const lines = stdout.trim().split('\n');
  assert.equal(lines[0], "'sensor-1' 'sensor-1' True 12");
  assert.equal(lines[1], "'sensor-2' 'sensor-2' False 10");
  // Unknown: success with an empty Device (zero bytes on the wire), not an error.
  assert.equal(lines[2], "'nobody' '' False 0");
  assert.match(lines[3]!, /^'x{10240}' '' False 0$/);
  assert.equal(lines[4], 'health 0801'); // HealthCheckResponse{status: SERVING}
  assert.equal(lines[5], 'garbage INTERNAL'); // undecodable request: an RPC error, and the server carries on
  assert.equal(lines[6], 'after True');
});

test('R-DEV-1 grpc-js stubs from the shipped proto: Get answers name and active; unknown is {name: "", active: false}', async (context) => {
  const t = lifo(context);
  const { address } = await devsvc(t);
  const client = devSvcClient(address);
  t.after(() => client.close());
  const get = (name: string) =>
    new Promise<unknown>((resolve, reject) => client.Get({ name }, new Metadata(), { deadline: Date.now() + 5000 }, (e, d) => (e ? reject(e) : resolve(d))));
  assert.deepEqual(await get('camera-1'), { name: 'camera-1', active: true });
  assert.deepEqual(await get(''), { name: '', active: false });
  assert.deepEqual(await get('ünknown/../%00'), { name: '', active: false });
});

test('R-DEV-7 DevSvc serves the standard health service and server reflection (grpcurl-style tools work)', async (context) => {
  const t = lifo(context);
  const { address } = await devsvc(t);
  const health = loadPackageDefinition(loadSync(healthProtoPath, { keepCase: true, defaults: true, enums: String })) as GrpcObject;
  const Health = ((health.grpc as GrpcObject).health as GrpcObject).v1 as GrpcObject;
  const healthClient = new (Health.Health as ServiceClientConstructor)(address, credentials.createInsecure());
  t.after(() => healthClient.close());
  const check = (service: string) =>
    new Promise<{ status: string }>((resolve, reject) =>
      (healthClient.Check as (r: object, cb: (e: ServiceError | null, v: { status: string }) => void) => void)({ service }, (e, v) =>
        e ? reject(e) : resolve(v),
      ),
    );
  assert.equal((await check('')).status, 'SERVING');
  assert.equal((await check('devices.DevSvc')).status, 'SERVING');
  await assert.rejects(check('no.Such'), (err: ServiceError) => err.code === status.NOT_FOUND);

  const reflectionProto = new URL('../../node_modules/@grpc/reflection/build/proto/grpc/reflection/v1/reflection.proto', import.meta.url).pathname;
  const reflection = loadPackageDefinition(loadSync(reflectionProto, { keepCase: true, defaults: true })) as GrpcObject;
  const Reflection = (((reflection.grpc as GrpcObject).reflection as GrpcObject).v1 as GrpcObject).ServerReflection as ServiceClientConstructor;
  const reflectionClient = new Reflection(address, credentials.createInsecure());
  t.after(() => reflectionClient.close());
  const stream = (reflectionClient.ServerReflectionInfo as () => NodeJS.ReadWriteStream & { write(v: object): boolean })();
  const answer = new Promise<{ list_services_response: { service: Array<{ name: string }> } }>((resolve, reject) => {
    stream.once('data', resolve);
    stream.once('error', reject);
  });
  stream.write({ list_services: '' });
  const services = (await answer).list_services_response.service.map((s) => s.name);
  stream.end();
  assert.ok(services.includes('devices.DevSvc'), services.join(','));
});

test('metrics: DevSvc serves /metrics, /health and /ready over HTTP beside gRPC and counts Get by result', async (context) => {
  const t = lifo(context);
  const { address, running } = await devsvc(t);
  const base = running.urls.find((u) => u.label === 'metrics')!.url.replace(/\/metrics$/, '');
  const client = devSvcClient(address);
  t.after(() => client.close());
  const get = (name: string) =>
    new Promise<unknown>((resolve, reject) => client.Get({ name }, new Metadata(), { deadline: Date.now() + 5000 }, (e, d) => (e ? reject(e) : resolve(d))));
  await get('camera-1');
  await get('camera-1');
  await get('nobody');
  assert.equal(await readMetric(base, 'offcloud_devsvc_lookups_total', { result: 'known', component: 'devsvc' }), 2);
  assert.equal(await readMetric(base, 'offcloud_devsvc_lookups_total', { result: 'unknown' }), 1);
  assert.equal((await fetch(`${base}/ready`)).status, 200);
  assert.equal((await fetch(`${base}/health`)).status, 200);
});

test('R-DEV-4 edits in quick succession: DevSvc ends up serving every device of the last file, whatever order its rereads end in', async (context) => {
  const t = lifo(context);
  const { address, dataDir } = await devsvc(t);
  const client = devSvcClient(address);
  t.after(() => client.close());
  const get = (name: string) =>
    new Promise<{ name: string; active: boolean }>((resolve, reject) =>
      client.Get({ name }, new Metadata(), { deadline: Date.now() + 5000 }, (e, d) => (e ? reject(e) : resolve(d!))),
    );
  const names = Array.from({ length: 30 }, (_, i) => `burst-${i}`);
  // Back to back, as a script or the console bench writes them: each write is one change event and one reread.
  for (const [i, name] of names.entries()) await addDevice(deviceFilePath(dataDir), name, i % 2 === 0);
  // An older reread ending last would leave some out for good: ask until all are there (bounded).
  const until = Date.now() + 10_000;
  let missing = names;
  while (missing.length && Date.now() < until) {
    missing = (await Promise.all(names.map(async (name) => ((await get(name)).name === name ? '' : name)))).filter(Boolean);
    if (missing.length) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.deepEqual(missing, []);
  assert.deepEqual(await get('burst-1'), { name: 'burst-1', active: false });
});
