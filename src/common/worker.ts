/**
 * Worker threads that run a TypeScript module. A worker does not inherit a
 * loader that the main thread registered through tsx's API (bin/offcloud.js
 * does that), and `--import` in a worker's execArgv is not honoured on Node 20,
 * so the worker starts from a small bootstrap that registers tsx itself and
 * then imports the module.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';

export function startTypeScriptWorker(module: URL, options: Omit<WorkerOptions, 'eval'> = {}): Worker {
  const bootstrap = `import { register } from ${JSON.stringify(import.meta.resolve('tsx/esm/api'))};
register();
await import(${JSON.stringify(module.href)});`;
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(bootstrap)}`), options);
}
