import { pino, type Logger } from 'pino';

export type { Logger };

/** A structured JSON logger for one component; secrets never reach it. */
export function createLogger(level: string, component: string): Logger {
  return pino(
    {
      level,
      base: { component },
      redact: {
        paths: ['req.headers.authorization', 'req.headers["ocp-apim-subscription-key"]', '*.password', '*.secret'],
        censor: '[redacted]',
      },
    },
    // Logs go to stderr, so stdout carries only what a command prints for people and scripts.
    pino.destination({ dest: 2, sync: true }),
  );
}
