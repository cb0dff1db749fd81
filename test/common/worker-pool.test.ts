/**
 * The shared worker-thread pool (face and sentiment run on it): tasks spread
 * over the free workers, a task's failure reaches its caller only, a worker
 * that dies fails its one task and is replaced, a worker that cannot load
 * stops start-up, and close refuses what is still queued.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { StartupError } from '../../src/common/errors.ts';
import { WorkerPool } from '../../src/common/worker-pool.ts';
import type { PoolTask } from './fixtures/pool-worker.ts';

const module = new URL('./fixtures/pool-worker.ts', import.meta.url);

test('worker pool: concurrent tasks run on different workers; a failing task fails alone; a dead worker is replaced', async () => {
  const pool = await WorkerPool.start<PoolTask, number>({ name: 'test', module, size: 2, workerData: {} });
  try {
    assert.equal(pool.workers, 2);
    const threads = await Promise.all([pool.run({ op: 'whoami', waitMs: 200 }), pool.run({ op: 'whoami', waitMs: 200 })]);
    assert.equal(new Set(threads).size, 2, 'two tasks at once went to the two workers');
    await assert.rejects(pool.run({ op: 'throw' }), /this task went wrong/);
    await assert.rejects(pool.run({ op: 'exit' }), /exited with code 3/);
    // Meanwhile the other worker serves; then the replacement has loaded and both take tasks again.
    assert.equal(typeof (await pool.run({ op: 'whoami', waitMs: 0 })), 'number');
    while (pool.workers < 2) await sleep(50);
    const after = await Promise.all([pool.run({ op: 'whoami', waitMs: 200 }), pool.run({ op: 'whoami', waitMs: 200 })]);
    assert.equal(new Set(after).size, 2);
    assert.ok(
      after.some((thread) => !threads.includes(thread)),
      'a new thread took the dead one’s place',
    );
  } finally {
    await pool.close();
  }
  await assert.rejects(pool.run({ op: 'whoami', waitMs: 0 }), /shutting down/);
});

test('worker pool: a worker that cannot load stops start-up with a StartupError naming the component', async () => {
  await assert.rejects(
    WorkerPool.start<PoolTask, number>({ name: 'face', module, size: 2, workerData: { failLoad: true } }),
    (err: Error) => err instanceof StartupError && /^face: /.test(err.message) && /the model file is missing/.test(err.message),
  );
});

test('worker pool: close refuses the tasks still queued', async () => {
  const pool = await WorkerPool.start<PoolTask, number>({ name: 'test', module, size: 1, workerData: {} });
  const running = pool.run({ op: 'whoami', waitMs: 300 });
  const queued = pool.run({ op: 'whoami', waitMs: 0 });
  const closed = pool.close();
  await assert.rejects(queued, /shutting down/);
  await assert.rejects(running, /exited/);
  await closed;
});
