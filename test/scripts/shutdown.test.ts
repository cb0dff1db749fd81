/**
 * After a burst of calls whose clients vanished mid-request,
 * SIGTERM must still stop `offcloud scripts` (exit 0 within 5 s) with every
 * running script's process group gone. The scripts here ignore SIGTERM and
 * leave a grandchild that ignores it too, so only a SIGKILL to the group ends them.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { LineWatcher, tempDataDir } from '../helpers/index.ts';
import { eventually, writeScript } from './helpers.ts';

const BIN = new URL('../../bin/offcloud.js', import.meta.url).pathname;

/** True while any process of the group is left, zombies aside (they are dead, waiting to be reaped). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch {
    return false;
  }
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .some((pid) => {
      // /proc/<pid>/stat: "pid (comm) state ppid pgrp …"; comm may hold spaces, so read after its last ')'.
      const stat = statOf(pid)
        ?.replace(/^.*\) /s, '')
        .split(' ');
      return stat !== undefined && Number(stat[2]) === pgid && stat[0] !== 'Z';
    });
}

/** A process's /proc stat line, or undefined when it has just gone. */
function statOf(pid: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
}

/** The process groups the scripts wrote down (each script is its group's leader). */
function runGroups(file: string): number[] {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  return text.trim().split('\n').filter(Boolean).map(Number);
}

/** Sends one request on a raw socket and drops the connection `afterMs` later (0: at once). */
function vanishingCall(port: number, head: string, afterMs: number): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(head);
      if (afterMs === 0) socket.destroy();
      else setTimeout(() => socket.destroy(), afterMs);
    });
    socket.on('close', () => resolve());
    socket.on('error', () => undefined);
  });
}

test("scripts: SIGTERM after a burst of vanished clients exits 0 within 5 s and kills every run's process group", async (t) => {
  const dataDir = await tempDataDir(t);
  const folder = join(dataDir, 'served');
  const pids = join(dataDir, 'pids');
  await writeScript(folder, 'stubborn.sh', `#!/bin/sh\ntrap '' TERM\necho $$ >> ${pids}\nsleep 60 &\necho started\nwait\n`);
  const server = spawn(
    process.execPath,
    [BIN, 'scripts', '--port', '0', '--data-dir', dataDir, '--scripts-dir', folder, '--max-running', '500', '--log-level', 'warn'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  t.after(async () => {
    server.kill('SIGKILL');
    // Should the test fail, what the server left behind goes too.
    for (const pgid of runGroups(pids)) if (groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
  });
  const stdout = new LineWatcher(server.stdout);
  const stderr = new LineWatcher(server.stderr);
  const line = await stdout.waitFor(/http:\/\/127\.0\.0\.1:\d+\//, 120_000);
  const port = Number(/127\.0\.0\.1:(\d+)/.exec(line)![1]);

  // Dropped at once (while the script is being spawned), a little later, mid-body, and one that stays without reading.
  const calls: Promise<void>[] = [];
  for (let i = 0; i < 120; i++) {
    const head = i % 3 === 2 ? 'POST /stubborn HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\npartial' : 'GET /stubborn HTTP/1.1\r\nHost: x\r\n\r\n';
    calls.push(vanishingCall(port, head, i % 4 === 0 ? 0 : i % 7));
  }
  const staying = connect(port, '127.0.0.1', () => staying.write('GET /stubborn HTTP/1.1\r\nHost: x\r\n\r\n'));
  staying.on('error', () => undefined);
  t.after(() => staying.destroy());
  await Promise.all(calls);
  // The client that stays has its script running (the others' may have been stopped already, as they left).
  let groups: number[] = [];
  await eventually(() => (groups = runGroups(pids)).length > 0, "the staying client's script to start", 30_000);

  const started = Date.now();
  server.kill('SIGTERM');
  const exited = once(server, 'exit') as Promise<[number | null, string | null]>;
  const limit = new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), 5000).unref());
  const outcome = await Promise.race([exited, limit]);
  assert.notEqual(outcome, 'late', `still running 5 s after SIGTERM; stderr:\n${stderr.text.slice(-2000)}`);
  assert.deepEqual(outcome, [0, null], `exit after ${Date.now() - started} ms; stderr:\n${stderr.text.slice(-2000)}`);
  // SIGKILL was sent before the exit; the kernel takes a moment to end the processes it reached.
  await eventually(() => !groups.some(groupAlive), "every run's process group to be gone", 1000).catch(() => undefined);
  assert.deepEqual(groups.filter(groupAlive), [], 'process groups of runs still alive after exit');
});
