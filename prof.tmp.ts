import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';

const dataDir = await mkdtemp(join(tmpdir(), 'prof-dev-'));
process.env.BENCH_DEVICES_DATA = dataDir;
process.env.BENCH_DEVICES_SERVICE = `devsvc-prof-${process.pid}`;
async function child(file: string, extra: string[] = []) {
  const c = spawn(process.execPath, [...extra, '--import', 'tsx', file], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(createInterface({ input: c.stdout }), 'line')) as [string];
  return { c, info: JSON.parse(line) };
}
const rep = await child('bench/devices/replica.ts');
const dd = await child('bench/devices/devdata.ts', ['--cpu-prof', '--cpu-prof-dir=/tmp/perf35/prof']);
const url = `${dd.info.url}/data/sensor-1`;
await autocannon({ url, connections: 10, duration: 1 });
const r = await autocannon({ url, connections: 10, duration: Number(process.argv[2] ?? 5) });
console.log('rps', r.requests.average, 'errors', r.errors + r.non2xx);
dd.c.kill('SIGTERM'); await once(dd.c, 'exit');
rep.c.kill('SIGTERM'); await once(rep.c, 'exit');
