/**
 * Child process: the components the console bench reads (hub, storage, one
 * DevSvc replica wired statically), or,
 * with `console <options JSON>`, the console alone — so its memory is its own.
 * Prints one JSON line when ready; SIGTERM closes.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureLocalCa } from '../../src/common/ca.ts';
import type { RunningComponent } from '../../src/common/component.ts';
import { resolveConfig } from '../../src/common/config.ts';
import { components } from '../../src/components.ts';
import { mergeFacts } from '../../src/common/facts.ts';

const quiet = { host: '127.0.0.1', port: 0, logLevel: 'silent' };
const started = new Map<string, RunningComponent>();
let dataDir = '';

async function start(name: string, own: Record<string, unknown>): Promise<RunningComponent> {
  const definition = components.find((c) => c.name === name)!;
  const ownQuiet = Object.fromEntries(Object.entries(quiet).filter(([key]) => key in definition.options));
  const file = { ...definition.upDefaults, ...definition.wireUp?.(mergeFacts(started.values()), started), ...ownQuiet, ...own };
  const running = await definition.start(resolveConfig(name, definition.options, { file, env: {} }));
  started.set(name, running);
  return running;
}

if (process.argv[2] === 'console') {
  const running = await start('console', JSON.parse(process.argv[3]!) as Record<string, unknown>);
  console.log(JSON.stringify({ base: running.urls[0]!.url.replace(/\/$/, ''), pid: process.pid }));
} else {
  dataDir = await mkdtemp(join(tmpdir(), 'offcloud-bench-console-'));
  const { caCertPath } = await ensureLocalCa(dataDir);
  await start('storage', { dataDir });
  await start('hub', { dataDir, restPort: 0, telemetryLogSize: 20_000 });
  await start('devsvc', { dataDir, registry: 'static', metricsPort: 0 });
  // What `up` would hand the console, as options for a console in another process.
  const consoleOptions = components.find((c) => c.name === 'console')!.wireUp!(mergeFacts(started.values()), started);
  console.log(JSON.stringify({ dataDir, caCertPath, consoleOptions, facts: mergeFacts(started.values()) }));
}
process.once('SIGTERM', async () => {
  for (const running of [...started.values()].reverse()) await running.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
  process.exit(0);
});
