/**
 * The offcloud binary: `offcloud up` starts every component (or those
 * `--only` names, with what they need), `offcloud
 * <component>` starts one, and a few helper commands (`offcloud ca`).
 * Help and usage errors load no server: components load their servers, and
 * this file its logger, only when something starts.
 */
import { commonOptions, kebab, readConfigFile, resolveConfig, type OptionSchema, type OptionValues } from './common/config.ts';
import type { CommandGroup, ComponentDefinition, RunningComponent, Subcommand } from './common/component.ts';
import { OffcloudError, StartupError, UsageError } from './common/errors.ts';
import { isDiskFull } from './common/files.ts';
import type { Logger } from './common/log.ts';
import { closeOnSignals } from './common/shutdown.ts';
import { ensureLocalCa } from './common/ca.ts';
import { mergeFacts } from './common/facts.ts';
import { commandGroups, components, upNeeds } from './components.ts';
import { formatStartTable, type FailedComponent, type TableNotes } from './up/table.ts';
import { selectComponents } from './up/only.ts';

interface ParsedArgs {
  flags: Record<string, string | boolean>;
  positionals: string[];
}

/** `--key value`, `--key=value`, `--flag`, `--no-flag`, and container-style `Key=Value`. */
export function parseArgs(args: string[], known: Map<string, string>): ParsedArgs {
  const flags: Record<string, string | boolean> = {};
  const positionals: string[] = [];
  const byLowerKey = new Map([...known.values()].map((key) => [key.toLowerCase(), key]));
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      let name = eq > 0 ? arg.slice(2, eq) : arg.slice(2);
      let value: string | boolean | undefined = eq > 0 ? arg.slice(eq + 1) : undefined;
      if (!known.has(name) && name.startsWith('no-') && known.has(name.slice(3)) && value === undefined) {
        name = name.slice(3);
        value = false;
      }
      const key = known.get(name);
      if (!key) throw new UsageError(`unknown option --${name}`);
      if (value === undefined) {
        const next = args[i + 1];
        value = next !== undefined && !next.startsWith('--') ? (i++, next) : true;
      }
      flags[key] = value;
      continue;
    }
    const assignment = /^([A-Za-z][A-Za-z0-9]*)=(.*)$/s.exec(arg);
    const key = assignment && byLowerKey.get(assignment[1]!.toLowerCase());
    if (assignment && key) flags[key] = assignment[2]!;
    else positionals.push(arg);
  }
  return { flags, positionals };
}

function flagNames(schema: OptionSchema, prefix = ''): Map<string, string> {
  return new Map(Object.keys(schema).map((key) => [`${prefix}${kebab(key)}`, key]));
}

function optionHelp(schema: OptionSchema, prefix = ''): string[] {
  return Object.entries(schema).map(([key, spec]) => {
    const shown = Array.isArray(spec.default) ? spec.default.join(',') : String(spec.default);
    const choices = spec.type === 'string' && spec.choices ? ` (${spec.choices.join('|')})` : '';
    return `  --${prefix}${kebab(key)}  ${spec.description}${choices}${shown === '' ? '' : ` [default: ${shown}]`}`;
  });
}

const GLOBAL_OPTIONS = {
  ...commonOptions,
  config: { type: 'string', default: '', description: 'JSON or YAML config file with a section per component' },
} as const satisfies OptionSchema;

function usage(): string {
  return [
    'usage: offcloud <command> [options]',
    '',
    'commands:',
    '  up                 start every component (or --only some) and print their URLs, keys and CA file',
    '  env                print what a running `offcloud up` started as shell variables (eval "$(npx offcloud env)")',
    ...components.map((c) => `  ${c.name.padEnd(18)} ${c.summary}`),
    ...commandGroups.map((g) => `  ${g.name.padEnd(18)} ${g.summary}`),
    '  ca                 print the local CA file and how clients trust it',
    '',
    'Run `offcloud <command> --help` for its options. Every option can also be set with',
    "OFFCLOUD_<COMPONENT>_<OPTION> (up's own as OFFCLOUD_<OPTION>: OFFCLOUD_ONLY=storage) or in the",
    '--config file; flags win over both.',
  ].join('\n');
}

function fileSection(path: string, component: string): Record<string, unknown> | undefined {
  return path ? readConfigFile(path)[component] : undefined;
}

function printStarted(started: ReadonlyMap<string, RunningComponent>, notes?: TableNotes): void {
  process.stdout.write(formatStartTable(started, notes) + '\n');
}

/** The command that most likely fixes a failed start: the one its message names, else the component's help. */
function fixFor(component: string, message: string): string {
  const named = /`(offcloud [^`]+)`/.exec(message)?.[1];
  if (named) return `${named}, then start again`;
  const flag = /--([a-z][a-z-]*)/.exec(message)?.[1];
  if (flag) return `give another value with --${component}-${flag} (see offcloud up --help)`;
  return `run \`offcloud ${component} --log-level debug\` alone to see the whole error`;
}

/** Starts a component; a full disk under its data dir is told in one line, not with a stack. */
async function startComponent(component: ComponentDefinition, options: OptionValues<OptionSchema>): Promise<RunningComponent> {
  try {
    return await component.start(options);
  } catch (err) {
    if (!isDiskFull(err)) throw err;
    throw new StartupError(`${component.name}: the disk holding the data dir ${String(options.dataDir)} is full; free some space and start again`);
  }
}

/** Closes in reverse start order, so a container's last usage report still finds billing. */
async function closeAll(started: Map<string, RunningComponent>, logger: Logger): Promise<void> {
  for (const [name, running] of [...started.entries()].reverse()) {
    const began = Date.now();
    await running.close().catch((err: unknown) => logger.error({ err, component: name }, 'error while closing'));
    logger.info({ component: name, ms: Date.now() - began }, 'closed');
  }
}

const UP_OPTIONS = {
  only: {
    type: 'list',
    default: [],
    description: `start only these components (comma-separated), with the ones they need (${Object.entries(upNeeds)
      .map(([name, needs]) => `${name}: ${Object.keys(needs).join(', ')}`)
      .join('; ')})`,
  },
  strict: {
    type: 'boolean',
    default: false,
    description:
      'exit with code 1 (after closing the rest) when any component fails to start; without it, up starts the others and names the failed one in its table',
  },
} as const satisfies OptionSchema;

/** A component's options as `offcloud up` gives them: its own defaults, with the ones up changes (a port that would clash). */
function upOptionHelp(component: ComponentDefinition): string[] {
  const schema = Object.fromEntries(
    Object.entries(component.options)
      // --<component>-host/-data-dir/-log-level exist, but the global ones are what a user sets.
      .filter(([key]) => !(key in commonOptions))
      .map(([key, spec]) => {
        const upDefault = (component.upDefaults as Record<string, unknown> | undefined)?.[key];
        return [key, upDefault === undefined ? spec : { ...spec, default: upDefault }];
      }),
  ) as OptionSchema;
  return [`${component.name}:`, ...optionHelp(schema, `${component.name}-`)];
}

function upUsage(): string {
  return [
    'usage: offcloud up [options]',
    'Starts every component (or the ones --only names, with those they need) on the defaults below and',
    'prints one table: URLs, keys and the CA file.',
    'A component that cannot start (a port taken, a model file missing) is shown in the table with',
    'the reason and the command that fixes it, and the others keep running (exit code 0 when they',
    'close); with --strict, up closes everything and exits with code 1 instead.',
    '`eval "$(npx offcloud env)"` sets the values as shell variables.',
    '',
    ...optionHelp(GLOBAL_OPTIONS),
    ...optionHelp(UP_OPTIONS),
    '',
    'Each component takes its own options as --<component>-<option>:',
    ...components.flatMap((c) => upOptionHelp(c)),
  ].join('\n');
}

async function runUp(args: string[]): Promise<number> {
  const known = flagNames({ ...GLOBAL_OPTIONS, ...UP_OPTIONS });
  known.set('help', 'help');
  for (const c of components) for (const [flag, key] of flagNames(c.options, `${c.name}-`)) known.set(flag, `${c.name}.${key}`);
  const { flags, positionals } = parseArgs(args, known);
  if (flags.help) {
    process.stdout.write(upUsage() + '\n');
    return 0;
  }
  if (positionals.length) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
  // OFFCLOUD_DATA_DIR and the other common variables apply here too: the CA is made where the components look for it.
  const global = resolveConfig('', { ...GLOBAL_OPTIONS, ...UP_OPTIONS }, { flags, env: process.env });
  const selection = selectComponents(components, upNeeds, global.only);
  const { createLogger } = await import('./common/log.ts');
  const logger = createLogger(global.logLevel, 'offcloud');
  await ensureLocalCa(global.dataDir, global.tlsNames);
  const started = new Map<string, RunningComponent>();
  const failed = new Map<string, FailedComponent>();
  const { removeUpState, writeUpState } = await import('./up/state.ts');
  // up.json describes this run only: whoever waits for it (the Testcontainers module) must not read a killed run's.
  await removeUpState(global.dataDir);
  closeOnSignals(async () => {
    await closeAll(started, logger);
    await removeUpState(global.dataDir);
  }, logger);
  for (const component of selection.components) {
    const own: Record<string, string | boolean> = {};
    for (const [key, value] of Object.entries(flags)) {
      if (key.startsWith(`${component.name}.`)) own[key.slice(component.name.length + 1)] = value;
      else if (key in commonOptions) own[key] = value;
    }
    try {
      const file = { ...component.upDefaults, ...component.wireUp?.(mergeFacts(started.values()), started), ...fileSection(global.config, component.name) };
      const options = resolveConfig(component.name, component.options, { flags: own, env: process.env, file, flagPrefix: `${component.name}-` });
      started.set(component.name, await startComponent(component, options));
    } catch (err) {
      if (global.strict) {
        await closeAll(started, logger);
        throw err;
      }
      const message = err instanceof Error ? err.message : String(err);
      // A start-up problem (OffcloudError) is told in one line; anything else with its stack.
      logger.error({ component: component.name, err: err instanceof OffcloudError ? message : err }, 'component did not start; the others go on');
      failed.set(component.name, { reason: message, fix: fixFor(component.name, message) });
    }
  }
  await writeUpState(global.dataDir, started, failed);
  printStarted(started, { failed, neededFor: selection.neededFor, envHint: true });
  return -1;
}

/** A management command, or its usage when asked (`--help` anywhere, `-h` alone): the command itself is not loaded for that. */
function runSubcommand(command: Subcommand, args: string[]): Promise<number> {
  if (args.includes('--help') || (args.length === 1 && args[0] === '-h')) {
    process.stdout.write(`usage: ${command.usage}\n${command.summary}\n`);
    return Promise.resolve(0);
  }
  return command.run(args);
}

async function runComponent(component: ComponentDefinition, args: string[]): Promise<number> {
  const sub = args[0] && !args[0].startsWith('-') && !args[0].includes('=') ? args[0] : undefined;
  if (sub) {
    const command = component.subcommands?.[sub];
    if (!command) throw new UsageError(`unknown command "offcloud ${component.name} ${sub}"; see offcloud ${component.name} --help`);
    return runSubcommand(command, args.slice(1));
  }
  const schema = {
    ...component.options,
    config: GLOBAL_OPTIONS.config,
    help: { type: 'boolean', default: false, description: 'show this help' },
  } as OptionSchema;
  const { flags, positionals } = parseArgs(args, flagNames(schema));
  if (flags.help) {
    const subs = Object.entries(component.subcommands ?? {}).map(([name, s]) => `  offcloud ${component.name} ${name} — ${s.summary}`);
    process.stdout.write(
      [
        `usage: offcloud ${component.name} [options]`,
        component.summary,
        '',
        ...optionHelp(component.options),
        ...(subs.length ? ['', 'commands:', ...subs] : []),
      ].join('\n') + '\n',
    );
    return 0;
  }
  if (positionals.length) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
  const configPath = typeof flags.config === 'string' ? flags.config : (process.env.OFFCLOUD_CONFIG ?? '');
  delete flags.config;
  delete flags.help;
  const options = resolveConfig(component.name, component.options, { flags, env: process.env, file: fileSection(configPath, component.name) });
  const running = await startComponent(component, options);
  const started = new Map([[component.name, running]]);
  const { createLogger } = await import('./common/log.ts');
  const logger = createLogger(String(options.logLevel ?? 'info'), 'offcloud');
  // Its record for `offcloud env` (in a compose container: `podman exec <container> offcloud env`).
  const { writeComponentState } = await import('./up/state.ts');
  const removeState = await writeComponentState(String(options.dataDir), component.name, running).catch((err: Error) => {
    logger.warn({ err: err.message }, 'no record for offcloud env: the data dir is not writable');
    return () => Promise.resolve();
  });
  closeOnSignals(async () => {
    await closeAll(started, logger);
    await removeState();
  }, logger);
  printStarted(started, { envHint: true });
  return -1;
}

async function runCommandGroup(group: CommandGroup, args: string[]): Promise<number> {
  // Own keys only: `offcloud score constructor` names a file, not Object.prototype.constructor.
  const command = args[0] && Object.hasOwn(group.subcommands, args[0]) ? group.subcommands[args[0]] : undefined;
  if (!command && group.command) {
    if (args[0] !== '--help' && args[0] !== '-h') return group.command.run(args);
    process.stdout.write([`usage: ${group.command.usage}`, group.summary].join('\n') + '\n');
    return 0;
  }
  if (!command) {
    const lines = Object.entries(group.subcommands).map(([name, s]) => `  offcloud ${group.name} ${name.padEnd(10)} ${s.summary}\n      ${s.usage}`);
    process.stdout.write([`usage: offcloud ${group.name} <command>`, group.summary, '', ...lines].join('\n') + '\n');
    if (!args[0] || args[0] === '--help') return 0;
    throw new UsageError(`unknown command "offcloud ${group.name} ${args[0]}"`);
  }
  return runSubcommand(command, args.slice(1));
}

async function runCa(args: string[]): Promise<number> {
  const schema = { dataDir: commonOptions.dataDir, tlsNames: commonOptions.tlsNames };
  const { flags, positionals } = parseArgs(args, flagNames({ ...schema, help: { type: 'boolean', default: false, description: '' } }));
  if (flags.help) {
    process.stdout.write(
      'usage: offcloud ca [--data-dir DIR] [--tls-names NAME,...]\nprints the local CA certificate file (made on first use, its server certificate with the names given) and how clients trust it\n',
    );
    return 0;
  }
  if (positionals.length) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
  delete flags.help;
  const { dataDir, tlsNames } = resolveConfig('', schema, { flags, env: process.env });
  const ca = await ensureLocalCa(dataDir, tlsNames);
  process.stdout.write(
    [
      ca.caCertPath,
      '',
      'Trust it from a client:',
      `  Node.js:  NODE_EXTRA_CA_CERTS=${ca.caCertPath} node app.js`,
      `  curl:     curl --cacert ${ca.caCertPath} https://localhost:…`,
      `  Python:   REQUESTS_CA_BUNDLE=${ca.caCertPath} (requests) or SSL_CERT_FILE=${ca.caCertPath}`,
      `  Debian:   cp ${ca.caCertPath} /usr/local/share/ca-certificates/offcloud.crt && update-ca-certificates`,
    ].join('\n') + '\n',
  );
  return 0;
}

const envCommand: Subcommand = {
  summary: 'print what a running `offcloud up` started as shell variables: URLs, CA, tenant, demo client and secret, a storage token, keys, a SAS token',
  usage: 'offcloud env [--data-dir DIR]   (eval "$(npx offcloud env)")',
  run: async (args) => (await import('./up/env.ts')).printEnv(args),
};

export async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(usage() + '\n');
    return command ? 0 : 2;
  }
  if (command === 'up') return runUp(args);
  if (command === 'ca') return runCa(args);
  if (command === 'env') return runSubcommand(envCommand, args);
  const component = components.find((c) => c.name === command);
  if (component) return runComponent(component, args);
  const group = commandGroups.find((g) => g.name === command);
  if (group) return runCommandGroup(group, args);
  throw new UsageError(`unknown command "${command}"; run offcloud --help for the list`);
}

try {
  const code = await main(process.argv.slice(2));
  // -1: servers are running; the process lives until a signal closes them.
  if (code >= 0) process.exit(code);
} catch (err) {
  if (err instanceof OffcloudError) {
    process.stderr.write(`offcloud: ${err.message}\n`);
    process.exit(err instanceof UsageError ? 2 : 1);
  }
  if (isDiskFull(err)) {
    // A management command that met a full disk: nothing it was writing was kept.
    process.stderr.write(`offcloud: the disk holding ${(err as NodeJS.ErrnoException).path ?? 'the data dir'} is full; free some space and try again\n`);
    process.exit(1);
  }
  throw err;
}
