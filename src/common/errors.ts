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
