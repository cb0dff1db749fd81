import type { Logger } from 'pino';

/**
 * On SIGTERM or SIGINT: run close() (stop accepting, drain in-flight work)
 * and exit 0. A second signal while draining exits at once with code 1.
 */
export function closeOnSignals(close: () => Promise<void>, logger: Logger): void {
  let closing = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) {
      logger.warn({ signal }, 'second signal while draining; exiting now');
      process.exit(1);
    }
    closing = true;
    logger.info({ signal }, 'draining in-flight requests, then exiting');
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
}
