/**
 * Tasks that must not overlap (two writes of one file, a check and the append
 * it guards, two runs of one model session) run one after another, in the
 * order they were asked for. A task that fails fails its caller only: the
 * next one still runs.
 */
export class SerialQueue {
  #tail: Promise<unknown> = Promise.resolve();

  /** Runs `task` once every task asked for before it has settled. */
  run<T>(task: () => Promise<T> | T): Promise<T> {
    const next = this.#tail.then(task, task);
    this.#tail = next.catch(() => undefined);
    return next;
  }

  /** Settles once every task asked for so far has settled. */
  async idle(): Promise<void> {
    await this.#tail;
  }
}

/** One SerialQueue per key (a file, a container name): tasks of different keys run side by side. */
export class KeyedSerialQueue {
  readonly #tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T> | T): Promise<T> {
    const next = (this.#tails.get(key) ?? Promise.resolve()).then(task, task);
    const tail = next.catch(() => undefined);
    this.#tails.set(key, tail);
    // A key whose tasks have all settled is forgotten, so the map holds only keys in use.
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return next;
  }
}
