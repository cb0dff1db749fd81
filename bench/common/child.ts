/**
 * Runs a benchmark's servers in a child process, so the load generator in this
 * process does not share an event loop with the server it measures. The child
 * module prints one JSON line with its URLs when it is ready, and exits on SIGTERM.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

/** How long servers get to stop after SIGTERM. */
const STOP_GRACE_MS = 10_000;

export interface ChildServers<T> {
  info: T;
  stop(): Promise<void>;
}

export async function startChildServers<T>(module: URL, args: string[] = []): Promise<ChildServers<T>> {
  const child = spawn(process.execPath, ['--import', 'tsx', module.pathname, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const [first] = (await Promise.race([
    once(lines, 'line'),
    once(child, 'exit').then(() => {
      throw new Error(`${module.pathname} exited before it was ready`);
    }),
  ])) as [string];
  return {
    info: JSON.parse(first) as T,
    stop: async () => {
      child.kill('SIGTERM');
      // A server that does not stop must not hold the bench: it gets SIGKILL.
      const kill = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
      if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
      clearTimeout(kill);
    },
  };
}

/** For the child side: print the ready line, and close everything on SIGTERM. */
export function announce(info: unknown, close: () => Promise<unknown>): void {
  process.stdout.write(JSON.stringify(info) + '\n');
  process.once('SIGTERM', () => {
    void close().finally(() => process.exit(0));
  });
}
