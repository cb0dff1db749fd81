/**
 * Worker threads and child processes that run one of our modules, named by
 * its TypeScript file (`new URL('./worker.ts', import.meta.url)`).
 *
 * From the package (compiled to dist/ by `npm run build`) the module is the
 * .js file beside this one's. From the sources (tests, development) it runs
 * through tsx: a worker does not inherit a loader that the main thread
 * registered through tsx's API (bin/offcloud.js does that), and `--import` in
 * a worker's execArgv is not honoured on Node 20, so the worker starts from a
 * small bootstrap that registers tsx itself and then imports the module; a
 * child process gets tsx's loader in its execArgv.
 */
import { fork, type ChildProcess, type ForkOptions } from 'node:child_process';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** Whether this code runs compiled (dist/*.js) rather than through tsx. */
const COMPILED = import.meta.url.endsWith('.js');

function compiledModule(module: URL): URL {
  return new URL(module.href.replace(/\.ts$/, '.js'));
}

export function startTypeScriptWorker(module: URL, options: Omit<WorkerOptions, 'eval'> = {}): Worker {
  if (COMPILED) return new Worker(compiledModule(module), options);
  const bootstrap = `import { register } from ${JSON.stringify(import.meta.resolve('tsx/esm/api'))};
register();
await import(${JSON.stringify(module.href)});`;
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(bootstrap)}`), options);
}

/** child_process.fork of one of our modules; execArgv is added to. */
export function forkTypeScript(module: URL, args: string[], options: ForkOptions = {}): ChildProcess {
  if (COMPILED) return fork(compiledModule(module), args, options);
  // By absolute URL, so any cwd works.
  return fork(module, args, { ...options, execArgv: [...(options.execArgv ?? []), '--import', import.meta.resolve('tsx')] });
}
