import type { Logger } from 'pino';

/** How often a process started by npm checks that npm is still there. */
const PARENT_CHECK_MS = 1000;

/**
 * Told at once when a shutdown signal arrives, before the components close
 * one after another: each starts ending its own in-flight work at the same
 * moment, so the stop is bounded by the slowest, not the sum.
 */
const signalListeners = new Set<() => void>();
let signalled = false;

/**
 * Calls `listener` when SIGTERM or SIGINT arrives (at once if one already
 * has). Returns the function that unregisters it (for a server that closed).
 */
export function onShutdownSignal(listener: () => void): () => void {
  if (signalled) {
    listener();
    return () => undefined;
  }
  signalListeners.add(listener);
  return () => signalListeners.delete(listener);
}

/** After a shutdown signal, how long in-flight requests get before their connections are cut. */
export const DRAIN_MS = 2500;

/**
 * From a shutdown signal on, in-flight work has DRAIN_MS to finish; then
 * `cut` ends what is left (connections whose client stopped sending or
 * reading mid-request), whether or not the component's turn to close has
 * come. Returns the function that unregisters it (call it on close).
 */
export function cutAfterDrain(cut: () => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  const forget = onShutdownSignal(() => {
    timer = setTimeout(cut, DRAIN_MS);
    timer.unref();
  });
  return () => {
    forget();
    clearTimeout(timer);
  };
}

/**
 * On SIGTERM or SIGINT: run close() (stop accepting, drain in-flight work)
 * and exit 0. A second signal while draining exits at once with code 1.
 *
 * Started by npm (`npx offcloud up`, `npm start`), the server is npm's child:
 * a SIGTERM to npm's PID ends npm but never reaches the server, which would
 * live on as an orphan holding every port. So such a process also closes when
 * its parent is gone. Started any other way (a shell, nohup, a container's
 * init) it keeps running on its own, as servers do.
 */
export function closeOnSignals(close: () => Promise<void>, logger: Logger): void {
  let closing = false;
  // `cause` is the signal received, or what happened instead (npm, the parent, is gone: it got the SIGTERM).
  const onSignal = (cause: NodeJS.Signals | 'parent process gone') => {
    const logged = cause === 'parent process gone' ? { cause, parent: 'npm' } : { signal: cause };
    if (closing) {
      logger.warn(logged, 'second signal while draining; exiting now');
      process.exit(1);
    }
    closing = true;
    signalled = true;
    logger.info(logged, 'draining in-flight requests, then exiting');
    for (const listener of signalListeners) listener();
    signalListeners.clear();
    close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'error while shutting down');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  if (process.env.npm_command) watchParent(() => onSignal('parent process gone'));
}

function watchParent(onGone: () => void): void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    try {
      process.kill(parent, 0);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') return;
      clearInterval(timer);
      onGone();
    }
  }, PARENT_CHECK_MS);
  timer.unref();
}
