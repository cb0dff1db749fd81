/**
 * Errors shared by every component. Components define their own wire errors;
 * these are the ones raised before a request exists (start-up, configuration).
 */
export class OffcloudError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** A bad configuration value: start-up stops with this one line. */
export class ConfigError extends OffcloudError {
  constructor(message: string) {
    super('ConfigError', message);
  }
}

/** Start-up failed for a reason the user can fix (port taken, file missing). */
export class StartupError extends OffcloudError {
  constructor(message: string) {
    super('StartupError', message);
  }
}

/** Wrong command-line usage: the CLI exits with code 2. */
export class UsageError extends OffcloudError {
  constructor(message: string) {
    super('UsageError', message);
  }
}

/**
 * A failure with a place in an interface's wire format: the HTTP status it
 * answers with and a stable `code` callers and tests can rely on. Every
 * component's wire errors extend it; each component's `errors.ts` turns them
 * (and anything else) into its own wire shape in one `toWireError`.
 */
export class WireError extends OffcloudError {
  constructor(
    readonly status: number,
    code: string,
    message: string,
  ) {
    super(code, message);
  }
}

/** What a failed request answers: status, body, and the headers the interface wants with it. */
export interface WireAnswer {
  status: number;
  body: unknown;
  headers?: Record<string, string | string[]>;
}

/** The 4xx status of a bad request the HTTP framework itself refused (body too large, unparsable JSON, wrong content type). */
export function clientErrorStatus(error: unknown): number | undefined {
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === 'number' && status >= 400 && status < 500 ? status : undefined;
}
