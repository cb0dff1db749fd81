/**
 * The one serial queue (hub sessions and files, billing's usage log, storage's container
 * names and blob indexes, scoring's model runs and key file, the billing connection's
 * calls): tasks never overlap, run in the order asked, and a failure fails its caller only.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KeyedSerialQueue, SerialQueue } from '../../src/common/serial-queue.ts';

/** A task that waits for `release` and records when it started and ended. */
function gatedTask(log: string[], name: string) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const task = async () => {
    log.push(`${name} start`);
    await gate;
    log.push(`${name} end`);
    return name;
  };
  return { task, release };
}

test('serial queue: tasks run one at a time in the order asked; a failure fails its caller only', async () => {
  const queue = new SerialQueue();
  const log: string[] = [];
  const a = gatedTask(log, 'a');
  const b = gatedTask(log, 'b');
  const first = queue.run(a.task);
  const failing = queue.run(() => Promise.reject(new Error('b went wrong')));
  const second = queue.run(b.task);
  const plain = queue.run(() => 'not a promise');
  b.release();
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(log, ['a start'], 'b waits for a although b could finish at once');
  a.release();
  assert.equal(await first, 'a');
  await assert.rejects(failing, /b went wrong/);
  assert.equal(await second, 'b');
  assert.equal(await plain, 'not a promise');
  assert.deepEqual(log, ['a start', 'a end', 'b start', 'b end']);
});

test('serial queue: idle() settles once every task asked for so far has settled, failed ones too', async () => {
  const queue = new SerialQueue();
  const log: string[] = [];
  const a = gatedTask(log, 'a');
  void queue.run(a.task);
  queue.run(() => Promise.reject(new Error('ignored'))).catch(() => undefined);
  let idle = false;
  const waiting = queue.idle().then(() => (idle = true));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(idle, false);
  a.release();
  await waiting;
  assert.deepEqual(log, ['a start', 'a end']);
});

test('keyed serial queue: one key runs one task at a time; other keys run beside it', async () => {
  const queue = new KeyedSerialQueue();
  const log: string[] = [];
  const a1 = gatedTask(log, 'a1');
  const a2 = gatedTask(log, 'a2');
  const b1 = gatedTask(log, 'b1');
  const runs = [queue.run('a', a1.task), queue.run('a', a2.task), queue.run('b', b1.task)];
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(log, ['a1 start', 'b1 start'], 'b does not wait for a; a2 waits for a1');
  b1.release();
  a2.release();
  await runs[2];
  assert.deepEqual(log, ['a1 start', 'b1 start', 'b1 end']);
  a1.release();
  assert.deepEqual(await Promise.all(runs), ['a1', 'a2', 'b1']);
  assert.deepEqual(log, ['a1 start', 'b1 start', 'b1 end', 'a1 end', 'a2 start', 'a2 end']);
  // A key whose tasks have all settled starts afresh.
  assert.equal(await queue.run('a', () => 'again'), 'again');
});
