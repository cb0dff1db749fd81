/**
 * The shared worker-thread pool (face and sentiment run on it): tasks spread
 * over the free workers, a task's failure reaches its caller only, a worker
 * that dies fails its one task and is replaced, a worker that cannot load
 * stops start-up, and close refuses what is still queued. A pool started when needed
 * (the hub's durable writes, htpasswd checks) has no thread until a task comes, and no
 * pool keeps its process alive while idle.
 */
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { StartupError } from '../../src/common/errors.ts';
import { WorkerPool } from '../../src/common/worker-pool.ts';
import type { PoolTask } from './fixtures/pool-worker.ts';
import { eventWithin } from '../helpers/index.ts';

const module = new URL('./fixtures/pool-worker.ts', import.meta.url);

test('worker pool: one task per worker unless told otherwise', async () => {
  const pool = await WorkerPool.start<PoolTask, number>({ name: 'test', module, size: 1, workerData: {} });
  try {
    const held = await Promise.all([1, 2, 3].map(() => pool.run({ op: 'in-flight', waitMs: 100 })));
    assert.deepEqual(held, [1, 1, 1]);
  } finally {
    await pool.close();
  }
});

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

test('worker pool started when needed: no thread until the first task; then one, which holds several tasks at once when allowed', async () => {
  const pool = WorkerPool.whenNeeded<PoolTask, number>({ name: 'writes', module, size: 1, tasksPerWorker: Infinity, workerData: {} });
  try {
    assert.equal(pool.workers, 0);
    const threads = await Promise.all([1, 2, 3].map(() => pool.run({ op: 'whoami', waitMs: 0 })));
    assert.equal(pool.workers, 1);
    assert.equal(new Set(threads).size, 1, 'one thread took all three');
    const held = await Promise.all([1, 2, 3].map(() => pool.run({ op: 'in-flight', waitMs: 500 })));
    assert.equal(Math.max(...held), 3, 'the thread held the three tasks at once');
    await assert.rejects(pool.run({ op: 'exit' }), /exited with code 3/);
    assert.equal(pool.workers, 0);
    assert.equal(typeof (await pool.run({ op: 'whoami', waitMs: 0 })), 'number', 'the next task started another thread');
  } finally {
    await pool.close();
  }
});

test('worker pool started when needed: a thread that cannot load fails the tasks waiting for it, naming why', async () => {
  const pool = WorkerPool.whenNeeded<PoolTask, number>({ name: 'checks', module, size: 1, workerData: { failLoad: true } });
  try {
    const waiting = [pool.run({ op: 'whoami', waitMs: 0 }), pool.run({ op: 'whoami', waitMs: 0 })];
    for (const task of waiting) {
      await assert.rejects(task, (err: Error) => err instanceof StartupError && /^checks: /.test(err.message) && /the model file is missing/.test(err.message));
    }
  } finally {
    await pool.close();
  }
});

test('worker pool: an idle pool does not keep its process alive; a busy one does until its task is answered', async () => {
  const script = [
    `import { WorkerPool } from ${JSON.stringify(new URL('../../src/common/worker-pool.ts', import.meta.url).href)};`,
    `const pool = await WorkerPool.start({ name: 'eager', module: new URL(${JSON.stringify(module.href)}), size: 1, workerData: {} });`,
    `const lazy = WorkerPool.whenNeeded({ name: 'lazy', module: new URL(${JSON.stringify(module.href)}), size: 1, workerData: {} });`,
    // Nothing but the tasks' threads is left to wait on: the answers must still come.
    `pool.run({ op: 'whoami', waitMs: 300 }).then((id) => console.log('eager answered', typeof id));`,
    `lazy.run({ op: 'whoami', waitMs: 300 }).then((id) => console.log('lazy answered', typeof id));`,
  ].join('\n');
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const [code] = await eventWithin<[number | null]>(child, 'exit', 'the process with two unclosed pools to exit by itself', 31_000);
  clearTimeout(timer);
  assert.equal(code, 0, 'it exited by itself, not killed after 30 s');
  assert.match(output, /eager answered number/);
  assert.match(output, /lazy answered number/);
});
