/**
 * Reported-PATCH round trips against a hub whose event loop is kept busy: in
 * the same process, every turn of the loop costs SPIN_MS of CPU (default 2),
 * as when a few hundred devices' telemetry keeps it busy. What it shows is how
 * many loop turns a PATCH waits for, which the full bench (index.ts) cannot
 * separate from the machine's load. Run: `npx tsx bench/hub/busy-loop.ts`.
 */
import { loadavg } from 'node:os';
import { connectDevice, nextMessage, startTestHub } from '../../test/hub/helpers.ts';

const SPIN_MS = Number(process.env.SPIN_MS ?? 2);
const PATCHES = Number(process.env.PATCHES ?? 60);

const closers: (() => unknown)[] = [];
const hub = await startTestHub({ after: (fn: () => unknown) => closers.push(fn) });
const device = await connectDevice(hub, 'busy', await hub.createDevice('busy'));
await device.subscribeAsync('$iothub/twin/res/#');

async function patchRoundTrips(): Promise<string> {
  const times: number[] = [];
  for (let i = 0; i < PATCHES; i++) {
    const started = performance.now();
    const answer = nextMessage(device, '$iothub/twin/res/');
    await device.publishAsync(`$iothub/twin/PATCH/properties/reported/?$rid=${i}`, JSON.stringify({ n: i }));
    await answer;
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return `p50 ${times[Math.floor(PATCHES / 2)]!.toFixed(1)} ms, p90 ${times[Math.floor(PATCHES * 0.9)]!.toFixed(1)} ms`;
}

let spinning = true;
const spin = () => {
  const end = performance.now() + SPIN_MS;
  while (performance.now() < end);
  if (spinning) setImmediate(spin);
};
await patchRoundTrips();
const idle = await patchRoundTrips();
setImmediate(spin);
const busy = await patchRoundTrips();
spinning = false;
console.log(
  `reported PATCH round trip, ${PATCHES} in a row: idle loop ${idle}; every loop turn costing ${SPIN_MS} ms: ${busy} (load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')})`,
);
await device.endAsync();
for (const close of closers) await close();
