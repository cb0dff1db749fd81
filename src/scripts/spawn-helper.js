/**
 * The script server's spawn helper: a small, long-lived Node process that only
 * creates the script processes (see spawner.ts, which starts it). Linux's fork
 * copies the page tables of the process that forks, so forking from this
 * process (about 45 MB) costs a fraction of forking from the server (100 MB
 * alone, 600–700 MB under `offcloud up`).
 *
 * Plain JavaScript on purpose: it runs without tsx from the sources too, which
 * would double its size (measured: 43 MB plain, 86 MB through tsx).
 *
 * Messages from the server: { id, command, args, cwd, env, stdin } (stdin:
 * base64 or null). For each, the script is spawned in its own process group
 * and the ends of its stdout and stderr pipes are sent back as handles, so the
 * server reads them itself: { type: 'stdout', id, pid } with stdout, then
 * { type: 'stderr', id } with stderr, later { type: 'exit', id, code, signal };
 * or { type: 'failed', id, code } when it cannot be started. Node delivers
 * messages in order, handles included.
 */
import { spawn } from 'node:child_process';

/**
 * Node starts reading a pipe as soon as spawn() makes it; this process must
 * not read a byte of what the server is to read, so reading stops before the
 * event loop runs again (before any data can have been read). Node offers no
 * public way to do that (docs/decisions/007-private-internals.md): this is its
 * stream handle's own `readStop()`. On a Node without it the run is refused
 * (false), rather than losing the first lines of every script.
 */
function stopReading(stream) {
  if (typeof stream._handle?.readStop !== 'function') return false;
  stream._handle.readStop();
  return true;
}

const NO_READ_STOP = `Node ${process.version} has no readStop() on a child's pipe handle (docs/decisions/007-private-internals.md)`;

process.on('message', (request) => {
  const { id } = request;
  let child;
  try {
    child = spawn(request.command, request.args, {
      cwd: request.cwd,
      env: request.env,
      detached: true,
      stdio: [request.stdin === null ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
  } catch (err) {
    process.send({ type: 'failed', id, code: err.code ?? err.message });
    return;
  }
  if (child.pid === undefined) {
    child.once('error', (err) => process.send({ type: 'failed', id, code: err.code ?? err.message }));
    return;
  }
  if (!stopReading(child.stdout) || !stopReading(child.stderr)) {
    process.kill(-child.pid, 'SIGKILL');
    process.send({ type: 'failed', id, code: NO_READ_STOP });
    return;
  }
  child.once('exit', (code, signal) => process.send({ type: 'exit', id, code, signal }));
  if (child.stdin) {
    // A script that never reads stdin closes it early: EPIPE is expected then.
    child.stdin.on('error', () => undefined);
    child.stdin.end(Buffer.from(request.stdin, 'base64'));
  }
  process.send({ type: 'stdout', id, pid: child.pid }, child.stdout);
  process.send({ type: 'stderr', id }, child.stderr);
});

// The server ends this process by closing the channel (or by ending itself). Signals sent
// to the whole process group (Ctrl-C in a terminal) are the server's to act on: it stops
// the runs, and their exit statuses must still reach it from here.
process.on('disconnect', () => process.exit(0));
process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => undefined);
process.send({ type: 'ready' });
