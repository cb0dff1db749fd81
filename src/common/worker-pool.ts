/**
 * Worker threads that each load something once (models, a key) and then take
 * tasks from one FIFO queue, so that concurrent requests spread over the
 * cores and none waits behind a busy worker while another is free (DESIGN
 * "The event loop stays free"). Every worker thread that answers requests is
 * one of these: the model pools (`WorkerPool.start`, loaded before the
 * server listens) and the single workers that take work off a busy event
 * loop (`WorkerPool.whenNeeded`: the hub's durable writes, htpasswd checks).
 * A worker that dies fails the tasks it held; an eager pool replaces it at
 * once, a pool started when needed with the next task. A worker keeps the
 * process alive only while it loads or holds a task: an idle pool does not.
 *
 * The worker module calls `serveTasks` with a loader; the loader's handler
 * answers each task. A handler's thrown error reaches the caller as an Error
 * with the same message: answers the caller must tell apart (an API refusal,
 * a stale file) belong in the handler's return value.
 */
import { parentPort, workerData, type TransferListItem, type Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { StartupError } from './errors.ts';
import { startTypeScriptWorker } from './worker.ts';

type ToPool<Out> =
  { type: 'ready' } | { type: 'load-failed'; message: string } | { type: 'done'; id: number; value: Out } | { type: 'failed'; id: number; message: string };

interface ToWorker<In> {
  id: number;
  input: In;
}

interface Task<In, Out> {
  message: ToWorker<In>;
  transfer: readonly TransferListItem[];
  resolve(value: Out): void;
  reject(error: Error): void;
}

interface Slot<In, Out> {
  worker: Worker;
  /** False until the worker has loaded; only loaded workers get tasks. */
  loaded: boolean;
  /** The tasks it holds, by id. */
  tasks: Map<number, Task<In, Out>>;
}

export interface WorkerPoolOptions {
  /** The component, for messages and logs. */
  name: string;
  /** The worker module (a .ts file that calls serveTasks). */
  module: URL;
  size: number;
  /**
   * Tasks one worker holds at once. 1 (the default) for work that keeps its
   * thread busy (a model run); more for work that mostly waits (file writes).
   */
  tasksPerWorker?: number;
  /** Handed to the worker's loader. */
  workerData?: unknown;
  logger?: Logger;
}

export class WorkerPool<In, Out> {
  private readonly slots: Slot<In, Out>[] = [];
  private readonly queue: Task<In, Out>[] = [];
  private nextId = 1;
  private closing = false;

  private constructor(
    private readonly options: WorkerPoolOptions,
    /** Workers start when tasks wait for them, not all at once. */
    private readonly startsWhenNeeded: boolean,
  ) {}

  /** Starts `size` workers and resolves once every one has loaded. */
  static async start<In, Out>(options: WorkerPoolOptions): Promise<WorkerPool<In, Out>> {
    const pool = new WorkerPool<In, Out>(options, false);
    try {
      await Promise.all(Array.from({ length: options.size }, () => pool.addWorker()));
    } catch (err) {
      await pool.close();
      throw err;
    }
    return pool;
  }

  /**
   * A pool with no worker until a task comes; then workers start, up to
   * `size`. A worker that cannot load fails the tasks waiting for it.
   */
  static whenNeeded<In, Out>(options: WorkerPoolOptions): WorkerPool<In, Out> {
    return new WorkerPool<In, Out>(options, true);
  }

  /** Workers loaded and taking tasks. */
  get workers(): number {
    return this.slots.filter((slot) => slot.loaded).length;
  }

  /** Runs one task on the next free worker; `transfer` lists buffers of `input` the worker may own. */
  run(input: In, transfer: readonly TransferListItem[] = []): Promise<Out> {
    if (this.closing) return Promise.reject(new Error(`${this.options.name} is shutting down`));
    return new Promise((resolve, reject) => {
      this.queue.push({ message: { id: this.nextId++, input }, transfer, resolve, reject });
      this.dispatch();
    });
  }

  async close(): Promise<void> {
    this.closing = true;
    this.failQueued(new Error(`${this.options.name} is shutting down`));
    await Promise.all([...this.slots].map((slot) => slot.worker.terminate()));
  }

  private addWorker(): Promise<void> {
    const { name, logger } = this.options;
    return new Promise((resolve, reject) => {
      const worker = startTypeScriptWorker(this.options.module, { workerData: this.options.workerData });
      // Listed at once, so that close() also ends a worker still loading.
      const slot: Slot<In, Out> = { worker, loaded: false, tasks: new Map() };
      this.slots.push(slot);
      let loadError: StartupError | undefined;
      worker.on('message', (message: ToPool<Out>) => {
        if (message.type === 'ready') {
          slot.loaded = true;
          resolve();
          this.dispatch();
          if (slot.tasks.size === 0) worker.unref();
        } else if (message.type === 'load-failed') {
          loadError = new StartupError(`${name}: a worker thread could not load: ${message.message}`);
          void worker.terminate();
        } else {
          this.finish(slot, message);
        }
      });
      worker.on('error', (err) => {
        if (!slot.loaded) loadError = new StartupError(`${name}: a worker thread failed to start: ${err.message}`);
        else logger?.error({ err }, `${name} worker thread failed`);
      });
      worker.on('exit', (code) => {
        const index = this.slots.indexOf(slot);
        if (index >= 0) this.slots.splice(index, 1);
        // A worker that died (or was ended by close) takes its tasks with it.
        for (const task of slot.tasks.values()) task.reject(new Error(`${name} worker thread exited with code ${code}`));
        if (!slot.loaded) {
          const err = loadError ?? new StartupError(`${name}: a worker thread exited with code ${code} while loading`);
          reject(err);
          // Tasks waiting for a worker that could not load fail with its reason, unless another worker may take them.
          if (this.startsWhenNeeded && this.slots.length === 0) this.failQueued(err);
          return;
        }
        if (this.closing) return;
        if (this.startsWhenNeeded) {
          this.dispatch();
          return;
        }
        logger?.error({ code }, `${name} worker thread exited; starting another`);
        this.addWorker().catch((err: Error) => logger?.error({ err }, `${name} worker thread could not be replaced`));
      });
    });
  }

  private finish(slot: Slot<In, Out>, message: Extract<ToPool<Out>, { id: number }>): void {
    const task = slot.tasks.get(message.id);
    slot.tasks.delete(message.id);
    if (task) {
      if (message.type === 'done') task.resolve(message.value);
      else task.reject(new Error(message.message));
    }
    this.dispatch();
    if (slot.tasks.size === 0) slot.worker.unref();
  }

  private dispatch(): void {
    const perWorker = this.options.tasksPerWorker ?? 1;
    for (const slot of this.slots) {
      while (slot.loaded && slot.tasks.size < perWorker) {
        const task = this.queue.shift();
        if (!task) return;
        if (slot.tasks.size === 0) slot.worker.ref();
        slot.tasks.set(task.message.id, task);
        slot.worker.postMessage(task.message, task.transfer);
      }
    }
    if (this.startsWhenNeeded && this.queue.length > 0 && !this.closing && this.slots.every((slot) => slot.loaded) && this.slots.length < this.options.size) {
      // Its failure to load is handled when it exits.
      this.addWorker().catch(() => undefined);
    }
  }

  private failQueued(err: Error): void {
    for (const task of this.queue.splice(0)) task.reject(err);
  }
}

/**
 * The worker side: loads once with the pool's workerData, then answers each
 * task with the loaded handler. Call it at the top of the worker module.
 */
export async function serveTasks<In, Out>(load: (data: unknown) => Promise<(input: In) => Promise<Out>>): Promise<void> {
  const port = parentPort;
  if (!port) throw new Error('serveTasks runs in a worker thread');
  const send = (message: ToPool<Out>) => port.postMessage(message);
  let handle: (input: In) => Promise<Out>;
  try {
    handle = await load(workerData);
  } catch (err) {
    send({ type: 'load-failed', message: (err as Error).stack ?? String(err) });
    return;
  }
  port.on('message', ({ id, input }: ToWorker<In>) => {
    handle(input).then(
      (value) => send({ type: 'done', id, value }),
      (err: unknown) => send({ type: 'failed', id, message: (err as Error).stack ?? String(err) }),
    );
  });
  send({ type: 'ready' });
}
