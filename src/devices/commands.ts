/**
 * `offcloud devices add|set-active|remove|list`: edits the device file a
 * DevSvc serves. The spec does not show how `active` changes (§3); these
 * commands are our choice, and a running DevSvc picks the change up itself.
 */
import { parseArgs } from 'node:util';
import type { CommandGroup, Subcommand } from '../common/component.ts';
import { commonOptions } from '../common/config.ts';
import { UsageError } from '../common/errors.ts';
import { formatTable } from '../common/table.ts';
import { InvalidDeviceNameError } from './errors.ts';
import { addDevice, deviceFilePath, readDevices, removeDevice, setDeviceActive } from './store.ts';

function parse(args: string[], positionals: number, usage: string, flags: Record<string, { type: 'boolean' | 'string' }> = {}) {
  let parsed;
  try {
    parsed = parseArgs({ args, allowPositionals: true, options: { 'data-dir': { type: 'string' }, ...flags } });
  } catch (err) {
    throw new UsageError(`${(err as Error).message}; usage: ${usage}`);
  }
  if (parsed.positionals.length !== positionals) throw new UsageError(`usage: ${usage}`);
  const dataDir = (parsed.values['data-dir'] as string | undefined) ?? process.env.OFFCLOUD_DATA_DIR ?? commonOptions.dataDir.default;
  return { file: deviceFilePath(dataDir), positionals: parsed.positionals, values: parsed.values as Record<string, string | boolean | undefined> };
}

function parseFlag(text: string, usage: string): boolean {
  if (text === 'true') return true;
  if (text === 'false') return false;
  throw new UsageError(`expected true or false, got ${JSON.stringify(text)}; usage: ${usage}`);
}

/** Where a command prints; process.stdout from the CLI, a buffer in tests. */
export interface Output {
  write(text: string): unknown;
}

type CommandRun = (args: string[], out: Output) => Promise<number>;

function command(summary: string, usage: string, run: CommandRun): Subcommand & { runTo: CommandRun } {
  return { summary, usage, run: (args) => run(args, process.stdout), runTo: run };
}

const ADD = 'offcloud devices add <name> [--inactive] [--data-dir DIR]';
const SET = 'offcloud devices set-active <name> <true|false> [--data-dir DIR]';
const REMOVE = 'offcloud devices remove <name> [--data-dir DIR]';
const LIST = 'offcloud devices list [--data-dir DIR]';

export const devicesCommands = {
  name: 'devices',
  summary: 'manage the device records DevSvc serves (add, set-active, remove, list)',
  subcommands: {
    add: command('add a device (active unless --inactive), or replace one', ADD, async (args, out) => {
      const { file, positionals, values } = parse(args, 1, ADD, { inactive: { type: 'boolean' } });
      const device = await addDevice(file, positionals[0]!, values.inactive !== true).catch((err: Error) => {
        throw err instanceof InvalidDeviceNameError ? new UsageError(err.message) : err;
      });
      out.write(`${device.name} active=${device.active}\n`);
      return 0;
    }),
    'set-active': command("set a device's active flag", SET, async (args, out) => {
      const { file, positionals } = parse(args, 2, SET);
      const [name, flag] = positionals as [string, string];
      if (!(await setDeviceActive(file, name, parseFlag(flag, SET)))) throw new UsageError(`no device named ${JSON.stringify(name)} in ${file}`);
      out.write(`${name} active=${flag}\n`);
      return 0;
    }),
    remove: command('remove a device', REMOVE, async (args, out) => {
      const { file, positionals } = parse(args, 1, REMOVE);
      if (!(await removeDevice(file, positionals[0]!))) throw new UsageError(`no device named ${JSON.stringify(positionals[0])} in ${file}`);
      out.write(`removed ${positionals[0]}\n`);
      return 0;
    }),
    list: command('list the devices and their active flags', LIST, async (args, out) => {
      const { file } = parse(args, 0, LIST);
      const devices = await readDevices(file);
      out.write(
        formatTable(
          ['name', 'active'],
          devices.map((d) => [d.name, String(d.active)]),
        ) + '\n',
      );
      return 0;
    }),
  },
} satisfies CommandGroup;
