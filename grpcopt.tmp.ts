import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metadata, credentials, loadPackageDefinition, type GrpcObject, type ServiceClientConstructor } from '@grpc/grpc-js';
import { devicesPackage } from './src/devices/proto.ts';

const dataDir = await mkdtemp(join(tmpdir(), 'prof-dev-'));
process.env.BENCH_DEVICES_DATA = dataDir;
process.env.BENCH_DEVICES_SERVICE = `devsvc-prof-${process.pid}`;
const c = spawn(process.execPath, ['--import', 'tsx', 'bench/devices/replica.ts'], { stdio: ['ignore', 'pipe', 'inherit'] });
const [line] = (await once(createInterface({ input: c.stdout }), 'line')) as [string];
const address = JSON.parse(line).address;
const DevSvc = (loadPackageDefinition(devicesPackage).devices as GrpcObject).DevSvc as ServiceClientConstructor;
const variants: Record<string, Record<string, number>> = {
  default: {},
  nochannelz: { 'grpc.enable_channelz': 0 },
  noretries: { 'grpc.enable_retries': 0 },
  both: { 'grpc.enable_channelz': 0, 'grpc.enable_retries': 0 },
};
const md = new Metadata();
for (let round = 0; round < 4; round++)
for (const [name, opts] of Object.entries(variants)) {
  const client = new DevSvc(address, credentials.createInsecure(), opts) as any;
  await new Promise((r) => client.Get({ name: 'sensor-1' }, new Metadata(), { deadline: Date.now() + 2000 }, r));
  const cpu0 = process.cpuUsage();
  let n = 0;
  const until = Date.now() + 3000;
  await Promise.all(Array.from({ length: 10 }, async () => {
    while (Date.now() < until) {
      await new Promise((r) => client.Get({ name: 'sensor-1' }, new Metadata(), { deadline: Date.now() + 2000 }, r));
      n++;
    }
  }));
  const cpu = process.cpuUsage(cpu0);
  console.log(name.padEnd(12), 'calls', n, 'client CPU us/call', ((cpu.user + cpu.system) / n).toFixed(1));
  client.close();
}
c.kill('SIGTERM'); await once(c, 'exit');
