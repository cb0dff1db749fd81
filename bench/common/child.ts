/**
 * Runs a benchmark's servers in a child process, so the load generator in this
 * process does not share an event loop with the server it measures. The child
 * module prints one JSON line with its URLs when it is ready, and exits on SIGTERM.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

export interface ChildServers<T> {
  info: T;
  stop(): Promise<void>;
}

export async function startChildServers<T>(module: URL): Promise<ChildServers<T>> {
  const child = spawn(process.execPath, ['--import', 'tsx', module.pathname], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const [first] = (await Promise.race([once(lines, 'line'), once(child, 'exit').then(() => { throw new Error(`${module.pathname} exited before it was ready`); })])) as [string];
  return {
    info: JSON.parse(first) as T,
    stop: async () => {
      child.kill('SIGTERM');
      if (child.exitCode === null) await once(child, 'exit');
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
