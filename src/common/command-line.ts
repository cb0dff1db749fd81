/**
 * Helpers for management commands (`offcloud models pull`, `offcloud scoring
 * keys …`): strict argument parsing whose errors are usage errors, the data
 * dir a command works on, and where it prints.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { commonOptions } from './config.ts';
import { UsageError } from './errors.ts';

type Options = NonNullable<ParseArgsConfig['options']>;

/** node:util's parseArgs, strict and with positionals; a bad argument is a UsageError that ends with the usage line. */
export function parseCommandArgs<O extends Options>(args: string[], options: O, usage: string) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\nusage: ${usage}`);
  }
}

/** The data dir a command works on: --data-dir, else $OFFCLOUD_DATA_DIR, else the default. */
export function commandDataDir(value: string | boolean | undefined): string {
  return typeof value === 'string' ? value : (process.env.OFFCLOUD_DATA_DIR ?? commonOptions.dataDir.default);
}

/** Where a command's output goes: stdout from the CLI, a list in tests. */
export type Print = (line: string) => void;
export const toStdout: Print = (line) => process.stdout.write(line + '\n');
